//! The pool through its public API: reuse, classes, contents, budget, idle release, bad input.

use std::time::Duration;

use heapworks_pool::{ClassesPerDoubling, Config, Inline, Pool, PoolError, PooledBuf};

const MIB: usize = 1 << 20;

/// An inline pool that caches heap buffers too, so that small sizes exercise the cache.
fn small_pool(config: Config) -> Pool {
    let backend = Inline {
        pool_heap_buffers: true,
        ..Inline::default()
    };
    Pool::with_backend(config, backend)
}

fn address<T: heapworks_pool::Element>(buf: &PooledBuf<T>) -> usize {
    buf.as_ptr() as usize
}

#[test]
fn a_dropped_buffer_is_handed_out_again() {
    let pool = small_pool(Config::default());
    let first = pool.get_filled::<f32>(1000, 2.0).unwrap();
    let at = address(&first);
    drop(first);
    let second = pool.get_filled::<f32>(1000, 3.0).unwrap();
    assert_eq!(address(&second), at);
    assert!(second.iter().all(|&x| x == 3.0));
    let stats = pool.stats();
    assert_eq!((stats.hits, stats.misses), (1, 1));
    assert_eq!(stats.bytes_handed_out, 8000);
}

#[test]
fn requests_share_a_buffer_of_their_class_and_larger_ones_do_not() {
    let pool = small_pool(Config::default());
    let at = address(&pool.get_filled::<u8>(10_000, 1).unwrap());
    // 10 000 B is in the class of 10 240 B (4 per doubling: 2 KiB steps from 8 KiB).
    assert_eq!(address(&pool.get_filled::<u8>(9_300, 1).unwrap()), at);
    assert_eq!(address(&pool.get_filled::<u8>(10_240, 1).unwrap()), at);
    let larger = pool.get_filled::<u8>(10_241, 1).unwrap();
    assert_ne!(address(&larger), at);
    assert!(larger.capacity_bytes() >= 10_241);
    assert_eq!(pool.stats().misses, 2);
}

#[test]
fn coarser_classes_hit_wider_shapes() {
    let pool = small_pool(Config {
        classes: ClassesPerDoubling::Two,
        ..Config::default()
    });
    let at = address(&pool.get_filled::<u8>(12 * 1024, 1).unwrap());
    assert_eq!(address(&pool.get_filled::<u8>(9 * 1024, 1).unwrap()), at);
}

#[test]
fn the_default_inline_pool_leaves_small_buffers_to_the_process_allocator() {
    let pool = Pool::new(Config::default());
    for _ in 0..3 {
        let small = pool.get_filled::<u8>(1000, 1).unwrap();
        assert_eq!(small.capacity_bytes(), 1000);
        drop(small);
        drop(pool.get_zeroed::<u8>(MIB).unwrap());
    }
    let stats = pool.stats();
    assert_eq!((stats.misses, stats.hits), (1, 2));
    assert_eq!(stats.buffers_cached, 1);
    assert_eq!(stats.bytes_handed_out, 3 * MIB as u64);
}

#[test]
fn every_buffer_is_aligned_to_64_bytes() {
    for pool in [
        Pool::new(Config::default()),
        small_pool(Config::default()),
        Pool::shared_memory(Config::default()),
    ] {
        let live: Vec<PooledBuf<u8>> = [1, 3, 63, 65, 1000, 300_000, 3 * MIB]
            .iter()
            .map(|&n| pool.get_filled::<u8>(n, 9).unwrap())
            .collect();
        for buf in &live {
            assert_eq!(
                address(buf) % 64,
                0,
                "{}: {} B",
                pool.backend_name(),
                buf.len()
            );
        }
    }
}

#[test]
fn zero_length_is_a_valid_empty_buffer() {
    let pool = small_pool(Config::default());
    let empty = pool.get::<f64>(0).unwrap();
    assert!(empty.is_empty());
    let empty = empty.fill(1.0);
    assert_eq!(empty.len(), 0);
    assert_eq!(address(&empty) % 64, 0);
    assert!(empty.shm_handle().is_none());
    drop(empty);
    let zeros = pool.get_zeroed::<u32>(0).unwrap();
    assert!(zeros.is_empty());
    drop(zeros);
    assert_eq!(pool.stats(), heapworks_pool::Stats::default());
}

#[test]
fn zeroed_buffers_are_zero_fresh_or_reused() {
    for pool in [
        small_pool(Config::default()),
        Pool::shared_memory(Config::default()),
    ] {
        for len in [5, 4096, 300_000, 3 * MIB] {
            let fresh = pool.get_zeroed::<u8>(len).unwrap();
            assert!(fresh.iter().all(|&b| b == 0));
            let at = address(&fresh);
            drop(fresh);
            drop(pool.get_filled::<u8>(len, 0xAB).unwrap());
            let reused = pool.get_zeroed::<u8>(len).unwrap();
            assert_eq!(address(&reused), at, "{} {len}", pool.backend_name());
            assert!(
                reused.iter().all(|&b| b == 0),
                "{} {len}",
                pool.backend_name()
            );
            let via_uninit = {
                drop(reused);
                pool.get::<u8>(len).unwrap().zeroed()
            };
            assert!(via_uninit.iter().all(|&b| b == 0));
        }
    }
}

#[test]
fn typed_buffers_see_their_elements() {
    let pool = small_pool(Config::default());
    let mut words = pool.get_filled::<u16>(3, 5).unwrap();
    words[1] = 0x0102;
    assert_eq!(&words[..], &[5, 0x0102, 5]);
    assert_eq!(words.as_bytes().len(), 6);
    let mut uninit = pool.get::<i64>(4).unwrap();
    for (index, slot) in uninit.as_uninit_mut().iter_mut().enumerate() {
        slot.write(-(index as i64));
    }
    // SAFETY: every element was written just above.
    let written = unsafe { uninit.assume_init() };
    assert_eq!(&written[..], &[0, -1, -2, -3]);
}

#[test]
fn an_overflowing_element_count_is_an_error_and_the_pool_goes_on() {
    let pool = small_pool(Config::default());
    let error = pool.get::<f64>(usize::MAX / 4).unwrap_err();
    assert!(
        matches!(error, PoolError::SizeOverflow { count, element_size: 8 } if count == usize::MAX / 4),
        "{error}"
    );
    assert!(error.to_string().contains("overflow"), "{error}");
    let error = pool.get::<u8>(isize::MAX as usize).unwrap_err();
    assert!(matches!(error, PoolError::TooLarge { .. }), "{error}");
    assert_eq!(pool.get_filled::<u8>(10, 1).unwrap().len(), 10);
}

#[test]
fn a_zero_budget_passes_everything_through() {
    let pool = small_pool(Config::with_budget(0));
    for _ in 0..3 {
        drop(pool.get_filled::<u8>(MIB, 1).unwrap());
        drop(pool.get_filled::<u8>(10, 1).unwrap());
    }
    let stats = pool.stats();
    assert_eq!((stats.hits, stats.misses), (0, 6));
    assert_eq!(stats.peak_bytes_cached, 0);
    assert_eq!(stats.buffers_cached, 0);
}

#[test]
fn the_budget_evicts_the_least_recently_returned_buffers() {
    // Room for three 1 MiB buffers.
    let pool = Pool::new(Config::with_budget(3 * MIB + MIB / 2));
    let buffers: Vec<PooledBuf<u8>> = (0..4).map(|_| pool.get_filled(MIB, 1).unwrap()).collect();
    let addresses: Vec<usize> = buffers.iter().map(address).collect();
    drop(buffers); // returned in order 0, 1, 2, 3: 0 is evicted when 3 comes back
    let stats = pool.stats();
    assert_eq!((stats.buffers_cached, stats.evictions), (3, 1));
    assert_eq!(stats.bytes_cached, 3 * MIB);
    assert!(stats.peak_bytes_cached <= pool.budget());
    // A larger class (no cached buffer fits it) comes back and pushes out the two oldest
    // 1 MiB buffers (1 and 2).
    drop(pool.get_filled::<u8>(5 * MIB / 2, 1).unwrap());
    assert_eq!(pool.stats().evictions, 3);
    let last = pool.get_filled::<u8>(MIB, 1).unwrap();
    assert_eq!(address(&last), addresses[3]);
    assert!(pool.stats().peak_bytes_cached <= pool.budget());
}

#[test]
fn a_request_takes_the_most_recent_buffer_of_the_nearest_doubling_that_has_one() {
    for pool in [
        Pool::new(Config::default()),
        Pool::shared_memory(Config::default()),
    ] {
        let name = pool.backend_name();
        let both = (
            pool.get_filled::<u8>(3 * MIB / 2, 1).unwrap(),
            pool.get_filled::<u8>(MIB, 1).unwrap(),
        );
        let (large, small) = (address(&both.0), address(&both.1));
        drop(both); // the 1 MiB buffer comes back last
                    // 800 KiB (class 896 KiB): both in its nearest doubling; the more recent one.
        let taken = pool.get_filled::<u8>(800 << 10, 2).unwrap();
        assert_eq!(address(&taken), small, "{name}");
        // 1.4 MiB: only the 1.5 MiB buffer fits.
        let second = pool.get_filled::<u8>(1400 << 10, 3).unwrap();
        assert_eq!(address(&second), large, "{name}");
        assert!(second.capacity_bytes() >= 3 * MIB / 2, "{name}");
        drop((taken, second)); // now the 1.5 MiB buffer comes back last
                               // 700 KiB (class 768 KiB): the 1 MiB buffer is in its nearest doubling, the more
                               // recent 1.5 MiB one only in the next.
        let near = pool.get_filled::<u8>(700 << 10, 4).unwrap();
        assert_eq!(address(&near), small, "{name}");
        // 400 KiB (class 448 KiB): nothing in its nearest doubling; 1.5 MiB in the next.
        let far = pool.get_filled::<u8>(400 << 10, 5).unwrap();
        assert_eq!(address(&far), large, "{name}");
        // 250 KiB (class 256 KiB): nothing cached within two doublings: a fresh buffer.
        let fresh = pool.get_filled::<u8>(250 << 10, 6).unwrap();
        assert!(![small, large].contains(&address(&fresh)), "{name}");
        let stats = pool.stats();
        assert_eq!((stats.hits, stats.misses), (4, 3), "{name}");
    }
}

#[test]
fn a_smaller_cached_buffer_is_never_handed_out() {
    for pool in [
        Pool::new(Config::default()),
        Pool::shared_memory(Config::default()),
    ] {
        let name = pool.backend_name();
        let small = address(&pool.get_filled::<u8>(MIB, 1).unwrap());
        let larger = pool.get_filled::<u8>(MIB + 1, 2).unwrap();
        assert_ne!(address(&larger), small, "{name}");
        assert!(larger.iter().all(|&b| b == 2), "{name}");
        let stats = pool.stats();
        assert_eq!((stats.misses, stats.buffers_cached), (2, 1), "{name}");
    }
}

#[test]
fn a_buffer_larger_than_the_budget_is_released_not_cached() {
    let pool = Pool::new(Config::with_budget(MIB));
    drop(pool.get_filled::<u8>(2 * MIB, 1).unwrap());
    assert_eq!(pool.stats().buffers_cached, 0);
    assert_eq!(pool.stats().peak_bytes_cached, 0);
}

#[test]
fn idle_release_frees_what_waited_long_enough() {
    let keep = small_pool(Config {
        idle_release: Some(Duration::from_secs(3600)),
        ..Config::default()
    });
    drop(keep.get_filled::<u8>(1000, 1).unwrap());
    assert_eq!(keep.release_idle(), 0);
    assert_eq!(keep.stats().buffers_cached, 1);

    let eager = small_pool(Config {
        idle_release: Some(Duration::ZERO),
        ..Config::default()
    });
    drop(eager.get_filled::<u8>(1000, 1).unwrap());
    drop(eager.get_filled::<u8>(MIB, 1).unwrap());
    // Every buffer was returned at or before now: all are idle for a zero idle time (the
    // second return's own sweep may already have released the first).
    let released = eager.release_idle();
    let stats = eager.stats();
    assert_eq!(stats.buffers_cached, 0);
    assert_eq!(stats.idle_releases, 2);
    assert!(released >= 1);
    assert_eq!(stats.bytes_cached, 0);

    let off = small_pool(Config::default());
    drop(off.get_filled::<u8>(1000, 1).unwrap());
    assert_eq!(off.release_idle(), 0);
}

#[test]
fn clear_releases_everything_cached() {
    let pool = small_pool(Config::default());
    drop(pool.get_filled::<u8>(1000, 1).unwrap());
    drop(pool.get_filled::<u8>(MIB, 1).unwrap());
    assert_eq!(pool.clear(), 2);
    let stats = pool.stats();
    assert_eq!((stats.buffers_cached, stats.bytes_cached), (0, 0));
}

#[test]
fn a_buffer_outliving_its_pool_is_released_on_drop() {
    let pool = Pool::shared_memory(Config::default());
    let buf = pool.get_filled::<u8>(5000, 7).unwrap();
    let fd = buf.shm_handle().unwrap().fd;
    drop(pool);
    assert!(buf.iter().all(|&b| b == 7));
    drop(buf);
    // The memfd was closed with the buffer's memory (nothing was cached).
    // SAFETY: fcntl(F_GETFD) only queries the descriptor table.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    assert!(flags == -1 || reopened_elsewhere(fd), "fd {fd} still open");
}

/// Whether `fd` is open on something other than a pool file (another test's descriptor that
/// took the closed number).
fn reopened_elsewhere(fd: i32) -> bool {
    std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .map(|target| !target.to_string_lossy().contains("heapworks-pool"))
        .unwrap_or(true)
}

#[test]
fn an_oversized_mapping_fails_with_the_os_error() {
    let pool = Pool::new(Config::default());
    // 2^46 B (64 TiB): more than this machine's memory and swap, refused by the kernel's
    // overcommit heuristic (or above the address space).
    match pool.get::<u8>(1 << 46) {
        Err(PoolError::Os {
            operation, source, ..
        }) => {
            assert_eq!(operation, "mmap");
            assert_eq!(source.raw_os_error(), Some(libc::ENOMEM));
        }
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => eprintln!("note: this kernel mapped 64 TiB (overcommit always on)"),
    }
    assert_eq!(pool.get_filled::<u8>(100, 1).unwrap().len(), 100);
}

#[cfg(feature = "ndarray")]
#[test]
fn an_array_view_over_a_pooled_buffer() {
    let pool = small_pool(Config::default());
    let buf = pool.get_zeroed::<f32>(6).unwrap();
    let at = address(&buf);
    let mut array = buf.into_array((2, 3)).unwrap();
    array.view_mut()[[1, 2]] = 4.0;
    assert_eq!(array.view().sum(), 4.0);
    assert_eq!(array.view().shape(), &[2, 3]);
    drop(array);
    assert_eq!(address(&pool.get_zeroed::<f32>(6).unwrap()), at);
    let error = pool
        .get_zeroed::<f32>(6)
        .unwrap()
        .into_array((4, 2))
        .unwrap_err();
    assert!(
        matches!(
            error,
            PoolError::Shape {
                shape_len: 8,
                buffer_len: 6
            }
        ),
        "{error}"
    );
}
