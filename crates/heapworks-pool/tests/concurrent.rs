//! Many threads getting and returning buffers at once, against a model of what the pool must
//! have done: with an ample budget every fresh buffer ends up cached and none is evicted; with
//! a tight one the cache never holds more than the budget. Every buffer carries its holder's
//! tag while it is live, so one handed to two holders at once is caught.

use std::sync::Barrier;

use heapworks_pool::{Config, Inline, Pool, PooledBuf};

const THREADS: usize = 4;
const ROUNDS: usize = 400;
/// Element counts of u64 requests: tiny to 2 MiB, some in one class.
const SIZES: [usize; 6] = [1, 8, 100, 1000, 40_000, 1 << 18];

/// A tag unique to a thread and round.
fn tag(thread: usize, round: usize) -> u64 {
    ((thread as u64) << 32) | round as u64
}

/// Requests of a run: all of them, and those of 256 KiB or more (the ones a default inline
/// pool caches: smaller ones go to the process allocator).
struct Requests {
    all: u64,
    mapped: u64,
}

fn hammer(pool: &Pool) -> Requests {
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let barrier = &barrier;
            scope.spawn(move || {
                barrier.wait();
                let mut held: Vec<(PooledBuf<u64>, u64)> = Vec::new();
                for round in 0..ROUNDS {
                    let count = SIZES[(round * 7 + thread * 3) % SIZES.len()];
                    let mark = tag(thread, round);
                    held.push((pool.get_filled(count, mark).unwrap(), mark));
                    if held.len() > 3 || round % 5 == 0 {
                        let (buf, mark) = held.remove(round % held.len());
                        assert!(
                            buf.iter().all(|&x| x == mark),
                            "a live buffer was overwritten"
                        );
                    }
                    std::thread::yield_now();
                }
                for (buf, mark) in held {
                    assert!(
                        buf.iter().all(|&x| x == mark),
                        "a live buffer was overwritten"
                    );
                }
            });
        }
    });
    let per_thread = |thread: usize| {
        (0..ROUNDS)
            .filter(|round| SIZES[(round * 7 + thread * 3) % SIZES.len()] * 8 >= 256 << 10)
            .count()
    };
    Requests {
        all: (THREADS * ROUNDS) as u64,
        mapped: (0..THREADS).map(per_thread).sum::<usize>() as u64,
    }
}

#[test]
fn with_an_ample_budget_every_fresh_buffer_ends_up_cached() {
    let pool = Pool::new(Config::with_budget(1 << 30));
    let requests = hammer(&pool);
    let stats = pool.stats();
    assert_eq!(stats.hits + stats.misses, requests.mapped);
    assert!(requests.mapped < requests.all);
    assert_eq!(stats.evictions, 0);
    // Nothing is live any more and nothing was released: the cache holds every fresh buffer.
    assert_eq!(stats.buffers_cached as u64, stats.misses);
    assert!(stats.hits > stats.misses, "{stats:?}");
    assert!(stats.peak_bytes_cached <= pool.budget());
}

#[test]
fn with_a_tight_budget_the_cache_never_holds_more() {
    let budget = 3 << 20;
    let backend = Inline {
        pool_heap_buffers: true,
        ..Inline::default()
    };
    let pool = Pool::with_backend(Config::with_budget(budget), backend);
    // A watcher reads the statistics while the threads run: never above the budget.
    let done = std::sync::atomic::AtomicBool::new(false);
    let (requests, looks) = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            let mut looks = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let stats = pool.stats();
                assert!(stats.bytes_cached <= budget, "{stats:?}");
                assert!(stats.peak_bytes_cached <= budget, "{stats:?}");
                looks += 1;
                std::thread::yield_now();
            }
            looks
        });
        let requests = hammer(&pool);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (requests, watcher.join().unwrap())
    });
    assert!(looks > 0);
    let stats = pool.stats();
    assert_eq!(stats.hits + stats.misses, requests.all);
    assert!(stats.evictions > 0, "{stats:?}");
    assert!(stats.peak_bytes_cached <= budget, "{stats:?}");
    assert!(stats.bytes_cached <= budget);
    assert!(stats.buffers_cached as u64 <= stats.misses - stats.evictions);
}

#[test]
fn shared_memory_pools_take_the_same_load() {
    let pool = Pool::shared_memory(Config::with_budget(8 << 20));
    let requests = hammer(&pool);
    let stats = pool.stats();
    assert_eq!(stats.hits + stats.misses, requests.all);
    assert!(stats.peak_bytes_cached <= pool.budget());
}

/// Threads sharing one shard race for its hot place (the most recent return, taken and put
/// back by atomic swaps), on one size and one two doublings up that the first cannot take:
/// no buffer goes to two holders, and every fresh buffer ends up cached, none lost.
#[test]
fn threads_racing_for_one_shards_most_recent_return_lose_and_share_nothing() {
    let pool = Pool::new(Config {
        shards: 1,
        ..Config::with_budget(1 << 30)
    });
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let (pool, barrier) = (&pool, &barrier);
            scope.spawn(move || {
                barrier.wait();
                for round in 0..ROUNDS {
                    let count = if (round + thread) % 3 == 0 {
                        1 << 17
                    } else {
                        1 << 15
                    };
                    let mark = tag(thread, round);
                    let buf = pool.get_filled::<u64>(count, mark).unwrap();
                    std::thread::yield_now();
                    assert!(buf.iter().all(|&x| x == mark), "a live buffer was shared");
                }
            });
        }
    });
    let stats = pool.stats();
    assert_eq!(stats.hits + stats.misses, (THREADS * ROUNDS) as u64);
    assert_eq!(stats.evictions, 0);
    assert_eq!(stats.buffers_cached as u64, stats.misses, "{stats:?}");
    assert!(stats.hits > stats.misses, "{stats:?}");
}
