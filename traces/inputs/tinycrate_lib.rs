//! Input for the cargo capture in traces/README.md: the whole source of a one-file crate.
use std::collections::HashMap;
pub fn count(text: &str) -> Vec<(String, usize)> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for word in text.split_whitespace() { *counts.entry(word.to_lowercase()).or_default() += 1; }
    let mut all: Vec<_> = counts.into_iter().collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    all
}
