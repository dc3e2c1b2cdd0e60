//! Property tests: random sequences of gets and drops against an exact model of the cache
//! (single thread: size classes, a hit taking the most recently returned buffer of the
//! request's class or the classes up to a doubling above, else of the next doubling, every
//! buffer filed under the class it was made for, LRU eviction across classes under the
//! budget), checking after every
//! step that no two live buffers overlap, that every live buffer still holds what its holder
//! wrote (so none was handed out twice), and that the pool's counts equal the model's.

use heapworks_pool::class::Classes;
use heapworks_pool::{ClassesPerDoubling, Config, Inline, Pool, PooledBuf};
use proptest::prelude::*;

/// Sizes in bytes: tiny ones, neighbours in one class, and mapped ones within one, two and
/// three doublings.
const SIZES: [usize; 12] = [
    1,
    60,
    64,
    700,
    760,
    5000,
    300_000,
    310_000,
    400_000,
    900_000,
    1 << 20,
    3 << 20,
];
/// Classes per doubling (the default): a request looks for a cached buffer in its class and
/// the next `REACH - 1`, then in the `REACH` classes after those.
const REACH: usize = 4;

#[derive(Debug, Clone)]
enum Step {
    Get { size: usize },
    Drop { index: usize },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0..SIZES.len()).prop_map(|i| Step::Get { size: SIZES[i] }),
        any::<prop::sample::Index>().prop_map(|i| Step::Drop {
            index: i.index(1 << 16)
        }),
    ]
}

/// What the pool must hold: cached (class, bytes) in return order, and the
/// counts.
#[derive(Default)]
struct Model {
    cached: Vec<(usize, usize)>,
    hits: u64,
    misses: u64,
    evictions: u64,
    peak: usize,
}

impl Model {
    fn bytes(&self) -> usize {
        self.cached.iter().map(|(_, bytes)| bytes).sum()
    }

    /// The most recent entry of a class in `classes`.
    fn newest(&self, classes: std::ops::Range<usize>) -> Option<usize> {
        self.cached.iter().rposition(|(c, _)| classes.contains(c))
    }

    /// Serves a request of class `class`; the class its buffer goes back under.
    fn get(&mut self, class: usize) -> usize {
        let nearest = self.newest(class..class + REACH);
        if let Some(at) = nearest.or_else(|| self.newest(class + REACH..class + 2 * REACH)) {
            self.hits += 1;
            return self.cached.remove(at).0;
        }
        self.misses += 1;
        class
    }

    fn put(&mut self, class: usize, bytes: usize, budget: usize) {
        if bytes > budget {
            return;
        }
        while self.bytes() + bytes > budget {
            self.cached.remove(0);
            self.evictions += 1;
        }
        self.cached.push((class, bytes));
        self.peak = self.peak.max(self.bytes());
    }
}

/// A live buffer, the byte it was filled with, and the class it goes back under (`None`: not
/// pooled).
type Live = (PooledBuf<u8>, u8, Option<usize>);

/// The pools under test.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Inline, small buffers left to the process allocator.
    Inline,
    /// Inline, every buffer cached.
    InlineAll,
    /// Shared memory.
    Shared,
}

fn run(steps: &[Step], budget: usize, kind: Kind) -> Result<(), TestCaseError> {
    let config = Config::with_budget(budget);
    let inline = Inline::default();
    let pool = match kind {
        Kind::Inline => Pool::new(config),
        Kind::InlineAll => Pool::with_backend(
            config,
            Inline {
                pool_heap_buffers: true,
                ..inline
            },
        ),
        Kind::Shared => Pool::shared_memory(config),
    };
    let pooled = |class_size: usize| match kind {
        Kind::Inline => class_size >= inline.map_threshold,
        Kind::InlineAll | Kind::Shared => true,
    };
    let classes = Classes::new(ClassesPerDoubling::default());
    let mut model = Model::default();
    let mut live: Vec<Live> = Vec::new();
    for (number, step) in steps.iter().enumerate() {
        match *step {
            Step::Get { size } => {
                let class = classes.of(size).unwrap();
                let home = pooled(class.size).then(|| model.get(class.index));
                let mark = number as u8;
                let buf = pool.get_filled::<u8>(size, mark).unwrap();
                live.push((buf, mark, home));
            }
            Step::Drop { index } if !live.is_empty() => {
                let (buf, mark, home) = live.swap_remove(index % live.len());
                prop_assert!(buf.iter().all(|&b| b == mark));
                if let Some(class) = home {
                    model.put(class, buf.capacity_bytes(), budget);
                }
            }
            Step::Drop { .. } => {}
        }
        // A second holder would have filled the whole buffer: its ends and middle suffice
        // here (each buffer is checked whole when dropped).
        for (buf, mark, _) in &live {
            let probes = [0, buf.len() / 2, buf.len() - 1];
            prop_assert!(
                probes.iter().all(|&i| buf[i] == *mark),
                "a live buffer was overwritten"
            );
        }
        let mut spans: Vec<(usize, usize)> = live
            .iter()
            .map(|(buf, _, _)| (buf.as_ptr() as usize, buf.capacity_bytes()))
            .collect();
        spans.sort_unstable();
        for pair in spans.windows(2) {
            prop_assert!(pair[0].0 + pair[0].1 <= pair[1].0, "live buffers overlap");
        }
        let stats = pool.stats();
        prop_assert_eq!(stats.hits, model.hits);
        prop_assert_eq!(stats.misses, model.misses);
        prop_assert_eq!(stats.evictions, model.evictions);
        prop_assert_eq!(stats.bytes_cached, model.bytes());
        prop_assert_eq!(stats.peak_bytes_cached, model.peak);
        prop_assert!(stats.peak_bytes_cached <= budget);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn inline_pool_matches_the_model(
        steps in prop::collection::vec(step(), 1..120),
        budget in prop_oneof![Just(0usize), 1000..3_000_000usize],
    ) {
        run(&steps, budget, Kind::Inline)?;
    }

    #[test]
    fn inline_pool_caching_everything_matches_the_model(
        steps in prop::collection::vec(step(), 1..120),
        budget in prop_oneof![Just(0usize), 1000..3_000_000usize],
    ) {
        run(&steps, budget, Kind::InlineAll)?;
    }

    #[test]
    fn shared_pool_matches_the_model(
        steps in prop::collection::vec(step(), 1..60),
        budget in 0..2_000_000usize,
    ) {
        run(&steps, budget, Kind::Shared)?;
    }
}
