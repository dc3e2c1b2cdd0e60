//! Verdicts: a check's runs tallied into `pass N/N`, `FAIL k/N: why` or `hang k/N: why`, and
//! a misuse run classified.
//!
//! Invariants: a misuse counts as [`Misuse::Caught`] only when the process was killed by a
//! signal and its stderr names the fault (a word such as "free", "double", "invalid",
//! "corrupt", "pointer" or "overflow"); a panic message of a Rust library ("panicked at") is a
//! crash, never a catch, whatever words it holds. A program's own report of corruption (exit
//! 3, `corrupted: …` on stdout) wins over what the malloc printed.

use super::child::{signal_name, End, Ran};

/// Words of a message that names a heap fault.
const FAULT_WORDS: [&str; 14] = [
    "free",
    "double",
    "invalid",
    "corrupt",
    "pointer",
    "overflow",
    "underflow",
    "chunk",
    "size",
    "unaligned",
    "misaligned",
    "use after",
    "use-after",
    "guard",
];

/// Exit status of `misuse.c` when its probe found the heap corrupted.
pub const CORRUPTED_EXIT: i32 = 3;

/// What a misuse run came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Misuse {
    /// Killed by a signal with a message naming the fault: its first line.
    Caught(String),
    /// Killed by a signal without such a message: the signal, and the message if any.
    Crashed(String),
    /// Exited normally but printed a message naming the fault.
    Warned(String),
    /// Exited normally, nothing noticed.
    Silent,
    /// The program saw the heap hand out memory in use: its report.
    Corrupted(String),
    /// Did not end in time.
    Hung,
}

impl Misuse {
    /// Classifies a run of `misuse.c` (or any program that follows its conventions).
    pub fn classify(ran: &Ran) -> Self {
        let message = first_line(&ran.stderr);
        let names_fault = names_fault(&ran.stderr);
        match ran.end {
            End::Hung => Misuse::Hung,
            End::Exited(CORRUPTED_EXIT) => {
                let report = first_line(&ran.stdout);
                Misuse::Corrupted(report.trim_start_matches("corrupted:").trim().to_string())
            }
            End::Exited(0) if names_fault => Misuse::Warned(message),
            End::Exited(0) => Misuse::Silent,
            End::Signaled(_) if names_fault => Misuse::Caught(message),
            End::Signaled(signal) if message.is_empty() => Misuse::Crashed(signal_name(signal)),
            End::Signaled(signal) => Misuse::Crashed(format!("{}: {message}", signal_name(signal))),
            End::Exited(code) if message.is_empty() => Misuse::Crashed(format!("exit {code}")),
            End::Exited(code) => Misuse::Crashed(format!("exit {code}: {message}")),
        }
    }

    /// The verdict text: the class, then its detail.
    pub fn verdict(&self) -> String {
        match self {
            Misuse::Caught(message) => format!("caught: {message}"),
            Misuse::Crashed(detail) => format!("crashed: {detail}"),
            Misuse::Warned(message) => format!("warned: {message}"),
            Misuse::Silent => "silent".to_string(),
            Misuse::Corrupted(report) => format!("corrupted: {report}"),
            Misuse::Hung => "hang".to_string(),
        }
    }
}

/// Whether `stderr` names a heap fault (and is not a Rust panic's message).
fn names_fault(stderr: &str) -> bool {
    let text = stderr.to_lowercase();
    !text.contains("panicked at") && FAULT_WORDS.iter().any(|word| text.contains(word))
}

/// The first non-empty line of `text`, trimmed and at most 160 characters.
pub fn first_line(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty());
    line.unwrap_or("").chars().take(160).collect()
}

/// Why a check's run failed, or `None` when it passed (exit 0).
pub fn check_failure(ran: &Ran, timeout_secs: u64) -> Option<String> {
    let message = first_line(&ran.stderr);
    let detail = |what: String| {
        if message.is_empty() {
            what
        } else {
            format!("{what}: {message}")
        }
    };
    match ran.end {
        End::Exited(0) => None,
        End::Hung => Some(detail(format!("no exit within {timeout_secs} s"))),
        End::Exited(code) => Some(detail(format!("exit {code}"))),
        End::Signaled(signal) => Some(detail(format!("killed by {}", signal_name(signal)))),
    }
}

/// The runs of one check under one malloc.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Runs done.
    pub runs: usize,
    /// Runs that passed.
    pub passed: usize,
    /// Runs that hung.
    pub hung: usize,
    /// The first failure's reason.
    pub first_failure: Option<String>,
}

impl Tally {
    /// Counts one run: `failure` is `None` when it passed.
    pub fn add(&mut self, failure: Option<String>, hung: bool) {
        self.runs += 1;
        match failure {
            None => self.passed += 1,
            Some(why) => {
                self.hung += usize::from(hung);
                self.first_failure.get_or_insert(why);
            }
        }
    }

    /// Runs that failed.
    pub fn failed(&self) -> usize {
        self.runs - self.passed
    }

    /// `pass 5/5`, `hang 1/1: …` (when any run hung) or `FAIL 2/5: …`; `planned` is how many
    /// runs the case asked for, told when the tally stopped early.
    pub fn verdict(&self, planned: usize) -> String {
        let failed = self.failed();
        let stopped = if self.runs < planned {
            format!(" (stopped early; {planned} planned)")
        } else {
            String::new()
        };
        match &self.first_failure {
            None => format!("pass {}/{}", self.passed, self.runs),
            Some(why) if self.hung > 0 => format!("hang {failed}/{}: {why}{stopped}", self.runs),
            Some(why) => format!("FAIL {failed}/{}: {why}{stopped}", self.runs),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn ran(end: End, stdout: &str, stderr: &str) -> Ran {
        Ran {
            end,
            stdout: stdout.into(),
            stderr: stderr.into(),
            elapsed: Duration::ZERO,
        }
    }

    #[test]
    fn misuse_classes() {
        let abort = libc::SIGABRT;
        let caught = ran(
            End::Signaled(abort),
            "",
            "free(): double free detected in tcache 2\n",
        );
        assert_eq!(
            Misuse::classify(&caught),
            Misuse::Caught("free(): double free detected in tcache 2".into())
        );
        let panic = "heapworks-malloc: panicked at src/tcache.rs:482:6:\nattempt to divide by zero";
        assert!(matches!(
            Misuse::classify(&ran(End::Signaled(abort), "", panic)),
            Misuse::Crashed(_)
        ));
        assert_eq!(
            Misuse::classify(&ran(End::Signaled(libc::SIGSEGV), "", "")),
            Misuse::Crashed("SIGSEGV".into())
        );
        assert_eq!(
            Misuse::classify(&ran(End::Exited(0), "", "")),
            Misuse::Silent
        );
        assert!(matches!(
            Misuse::classify(&ran(End::Exited(0), "", "mimalloc: error: double free")),
            Misuse::Warned(_)
        ));
        let corrupted = ran(End::Exited(CORRUPTED_EXIT), "corrupted: same block\n", "");
        assert_eq!(
            Misuse::classify(&corrupted).verdict(),
            "corrupted: same block"
        );
        assert_eq!(Misuse::classify(&ran(End::Hung, "", "")), Misuse::Hung);
    }

    #[test]
    fn tallies() {
        let mut tally = Tally::default();
        tally.add(None, false);
        tally.add(None, false);
        assert_eq!(tally.verdict(2), "pass 2/2");
        tally.add(Some("no exit within 5 s".into()), true);
        assert_eq!(tally.failed(), 1);
        assert_eq!(
            tally.verdict(5),
            "hang 1/3: no exit within 5 s (stopped early; 5 planned)"
        );
    }
}
