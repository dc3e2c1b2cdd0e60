//! The measurement behind heapworks-pool's default spacing of size classes (its TUNING.md):
//! `bench --pool`'s variable-shape pattern (600 steps, seed 1) through an inline pool with two,
//! four and eight classes per doubling: hit rate, misses, the most the cache held, and bytes handed out over bytes asked for (pooled requests only). Deterministic: no
//! time is measured.

use heapworks_pool::{ClassesPerDoubling, Config, Pool};
use heapworks_pool_bench::patterns::Pattern;

/// Tensors of at least this many bytes are pooled by the default inline backend.
const POOLED_FROM: usize = 256 << 10;

fn main() {
    let (steps, _) = Pattern::VariableShape.draw(1, 600);
    let spacings = [
        ("two", ClassesPerDoubling::Two),
        ("four", ClassesPerDoubling::Four),
        ("eight", ClassesPerDoubling::Eight),
    ];
    for (name, classes) in spacings {
        let pool = Pool::new(Config {
            classes,
            ..Config::with_budget(256 << 20)
        });
        let (mut handed, mut asked) = (0, 0);
        for lens in &steps {
            let live: Vec<_> = lens
                .iter()
                .map(|&n| {
                    pool.get_filled::<f32>(n, 1.0)
                        .expect("memory for the pattern")
                })
                .collect();
            for buf in live.iter().filter(|buf| buf.len() * 4 >= POOLED_FROM) {
                handed += buf.capacity_bytes();
                asked += buf.len() * 4;
            }
        }
        let stats = pool.stats();
        println!(
            "{name:>5} per doubling: hits {:.1} %, misses {}, most cached {:.1} MiB, \
             handed out / asked {:.3}",
            stats.hit_rate() * 100.0,
            stats.misses,
            stats.peak_bytes_cached as f64 / f64::from(1 << 20),
            handed as f64 / asked as f64
        );
    }
}
