//! Shared memory across processes, and its failures.
//!
//! The child processes are this test binary run again with `HEAPWORKS_POOL_CHILD` naming what
//! to do: the test `child` then does it (and does nothing in a normal run). A child proves it
//! ran by printing a line starting with `child:`; the parent checks that line, so a child that
//! ran no test cannot pass.

use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Output};

use heapworks_pool::{Config, Pool, PoolError, SharedMapping, ShmHandle};

const CHILD: &str = "HEAPWORKS_POOL_CHILD";
/// The descriptor number the shared tensor is inherited under.
const INHERITED_FD: RawFd = 100;
/// Elements of the tensor handed to the child.
const TENSOR: usize = 1 << 20;

/// Runs this binary's `child` test with `role`, `fd` inherited as [`INHERITED_FD`] if given.
fn run_child(role: &str, args: &str, fd: Option<RawFd>) -> Output {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, role)
        .env("HEAPWORKS_POOL_CHILD_ARGS", args);
    if let Some(fd) = fd {
        // SAFETY: dup2 is async-signal-safe and touches only the child's descriptor table;
        // the copy it makes has no close-on-exec flag, so it survives the exec.
        unsafe {
            command.pre_exec(move || {
                if libc::dup2(fd, INHERITED_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "child {role} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The child's `child:` line (from its start: the harness prints the test's name before it).
fn child_line(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.find("child:").map(|at| &line[at..]))
        .unwrap_or_else(|| panic!("no child line: {}", String::from_utf8_lossy(&output.stdout)))
        .to_string()
}

#[test]
fn another_process_reads_the_tensor_and_writes_its_answer_in_place() {
    let pool = Pool::shared_memory(Config::default());
    let mut tensor = pool.get::<f32>(TENSOR).unwrap();
    for (index, slot) in tensor.as_uninit_mut().iter_mut().enumerate() {
        slot.write((index % 1000) as f32 * 0.5);
    }
    // SAFETY: every element was written above.
    let tensor = unsafe { tensor.assume_init() };
    let handle = tensor.shm_handle().unwrap();
    let expected: f64 = tensor.iter().map(|&x| f64::from(x)).sum();

    let args = format!("{} {}", handle.offset, handle.len);
    let output = run_child("read_tensor", &args, Some(handle.fd));
    let line = child_line(&output);
    let sum: f64 = line.trim_start_matches("child: sum ").parse().unwrap();
    assert_eq!(sum, expected, "{line}");
    // The child doubled every element in its mapping: the same pages as ours.
    for (index, &x) in tensor.iter().enumerate() {
        assert_eq!(x, (index % 1000) as f32, "element {index}");
    }
}

#[test]
fn running_out_of_descriptors_is_an_error_and_the_pool_recovers() {
    let output = run_child("exhaust_descriptors", "", None);
    assert!(child_line(&output).starts_with("child: exhausted"));
}

#[test]
fn running_out_of_address_space_is_an_error_and_the_pool_recovers() {
    let output = run_child("exhaust_address_space", "", None);
    assert!(child_line(&output).starts_with("child: mmap refused"));
}

#[test]
fn a_handle_of_another_pool_is_rejected() {
    let mine = Pool::shared_memory(Config::default());
    let theirs = Pool::shared_memory(Config::default());
    let buf = theirs.get_filled::<u8>(100, 1).unwrap();
    let handle = buf.shm_handle().unwrap();
    let error = mine.map_handle(&handle).unwrap_err();
    assert!(matches!(error, PoolError::ForeignHandle { .. }), "{error}");
    let own = theirs.map_handle(&handle).unwrap();
    // SAFETY: nobody writes the buffer while the slice lives.
    assert_eq!(unsafe { own.as_slice::<u8>() }, &[1; 100][..]);
}

#[test]
fn a_closed_or_short_descriptor_is_rejected() {
    let pool = Pool::shared_memory(Config::default());
    let buf = pool.get_filled::<u8>(100, 1).unwrap();
    let handle = buf.shm_handle().unwrap();
    for closed in [-1, 1 << 30] {
        let error = pool.map_handle(&handle.with_fd(closed)).unwrap_err();
        assert!(matches!(error, PoolError::BadHandle { .. }), "{error}");
        assert!(error.to_string().contains("Bad file descriptor"), "{error}");
    }
    let too_long = ShmHandle {
        len: 1 << 20,
        ..handle
    };
    let error = SharedMapping::map(&too_long).unwrap_err();
    assert!(error.to_string().contains("shorter"), "{error}");
    assert!(matches!(
        SharedMapping::map(&ShmHandle { len: 0, ..handle }),
        Err(PoolError::BadHandle { .. })
    ));
}

/// The children's side; does nothing unless run as a child.
#[test]
fn child() {
    let Ok(role) = std::env::var(CHILD) else {
        return;
    };
    let args = std::env::var("HEAPWORKS_POOL_CHILD_ARGS").unwrap_or_default();
    match role.as_str() {
        "read_tensor" => read_tensor(&args),
        "exhaust_descriptors" => exhaust_descriptors(),
        "exhaust_address_space" => exhaust_address_space(),
        other => panic!("unknown child role {other}"),
    }
}

/// Maps the inherited tensor, sums it, doubles it in place.
fn read_tensor(args: &str) {
    let mut fields = args.split_whitespace().map(|f| f.parse::<u64>().unwrap());
    let (offset, len) = (fields.next().unwrap(), fields.next().unwrap() as usize);
    let handle = ShmHandle {
        fd: INHERITED_FD,
        offset,
        len,
        pool: 0,
    };
    let mapping = SharedMapping::map(&handle).unwrap();
    // SAFETY: the parent waits for this process to exit before it touches the tensor again.
    let tensor = unsafe { mapping.as_mut_slice::<f32>() };
    assert_eq!(tensor.len(), TENSOR);
    let sum: f64 = tensor.iter().map(|&x| f64::from(x)).sum();
    for x in tensor.iter_mut() {
        *x *= 2.0;
    }
    println!("child: sum {sum}");
}

/// Lowers this process's descriptor limit to a few above those open, then gets shared
/// buffers until `memfd_create` fails.
fn exhaust_descriptors() {
    let open = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
    set_limit(libc::RLIMIT_NOFILE, open + 8);
    let pool = Pool::shared_memory(Config::default());
    let mut live = Vec::new();
    let error = loop {
        match pool.get_filled::<u8>(4096, 1) {
            Ok(buf) => live.push(buf),
            Err(error) => break error,
        }
        assert!(live.len() < 100, "the descriptor limit did not bite");
    };
    match &error {
        PoolError::Os {
            operation, source, ..
        } => {
            assert_eq!(*operation, "memfd_create");
            assert_eq!(source.raw_os_error(), Some(libc::EMFILE), "{error}");
        }
        other => panic!("unexpected error {other}"),
    }
    assert!(!live.is_empty());
    // The pool goes on: a returned buffer is reused without a new descriptor...
    live.pop();
    assert!(pool.get_filled::<u8>(4096, 2).is_ok());
    // ...and once the cache is cleared, released descriptors make room for fresh buffers.
    let held = live.len();
    live.truncate(held / 2);
    pool.clear();
    assert!(pool.get_filled::<u8>(8192, 3).is_ok());
    println!("child: exhausted after {held} buffers: {error}");
}

/// Lowers this process's address-space limit to 256 MiB above its current size, then asks
/// for 1 GiB, inline and shared.
fn exhaust_address_space() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmSize:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    set_limit(libc::RLIMIT_AS, kib * 1024 + (256 << 20));
    for pool in [
        Pool::new(Config::default()),
        Pool::shared_memory(Config::default()),
    ] {
        match pool.get::<u8>(1 << 30) {
            Err(PoolError::Os {
                operation, source, ..
            }) => {
                assert_eq!(operation, "mmap");
                assert_eq!(source.raw_os_error(), Some(libc::ENOMEM));
            }
            Err(other) => panic!("unexpected error {other}"),
            Ok(_) => panic!("1 GiB mapped under a 256 MiB address-space limit"),
        }
        assert!(pool.get_filled::<u8>(1 << 20, 1).is_ok());
    }
    println!("child: mmap refused for 1 GiB, inline and shared");
}

/// Sets the soft limit of `resource` to `value`, keeping the hard limit.
fn set_limit(resource: libc::__rlimit_resource_t, value: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write only the struct given; the limit is
    // this child process's own.
    unsafe {
        assert_eq!(libc::getrlimit(resource, &mut limit), 0);
        limit.rlim_cur = value.min(limit.rlim_max);
        assert_eq!(libc::setrlimit(resource, &limit), 0);
    }
}
