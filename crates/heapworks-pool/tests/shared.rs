//! Shared memory across processes, and its failures.
//!
//! The child processes are this test binary run again with `HEAPWORKS_POOL_CHILD` naming what
//! to do: the test `child` then does it (and does nothing in a normal run). A child proves it
//! ran by printing a line starting with `child:`; the parent checks that line, so a child that
//! ran no test cannot pass.

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output, Stdio};

use heapworks_pool::{Config, Pool, PoolError, PooledBuf, SharedMapping, ShmHandle};

const CHILD: &str = "HEAPWORKS_POOL_CHILD";
/// The descriptor number the shared tensor is inherited under.
const INHERITED_FD: RawFd = 100;
/// Elements of the tensor handed to the child.
const TENSOR: usize = 1 << 20;

/// Runs this binary's `child` test with `role`, `fd` inherited as [`INHERITED_FD`] if given,
/// and waits for it to succeed.
fn run_child(role: &str, args: &str, fd: Option<RawFd>) -> Output {
    finish(role, spawn_child(role, args, fd))
}

/// Starts this binary's `child` test with `role` (see [`run_child`]).
fn spawn_child(role: &str, args: &str, fd: Option<RawFd>) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, role)
        .env("HEAPWORKS_POOL_CHILD_ARGS", args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
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
    command.spawn().unwrap()
}

/// Waits for a child and asserts that it succeeded.
fn finish(role: &str, child: Child) -> Output {
    let output = child.wait_with_output().unwrap();
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

/// A pooled shared tensor of [`TENSOR`] elements, element `i` being `(i % 1000) / 2`, and
/// the sum of its elements.
fn shared_tensor(pool: &Pool) -> (PooledBuf<f32>, f64) {
    let mut tensor = pool.get::<f32>(TENSOR).unwrap();
    for (index, slot) in tensor.as_uninit_mut().iter_mut().enumerate() {
        slot.write((index % 1000) as f32 * 0.5);
    }
    // SAFETY: every element was written above.
    let tensor = unsafe { tensor.assume_init() };
    let sum = tensor.iter().map(|&x| f64::from(x)).sum();
    (tensor, sum)
}

/// Checks the child's reported sum, and that it doubled every element in its mapping: the
/// same pages as ours.
fn assert_child_answered(output: &Output, tensor: &[f32], expected: f64) {
    let line = child_line(output);
    let sum: f64 = line.trim_start_matches("child: sum ").parse().unwrap();
    assert_eq!(sum, expected, "{line}");
    for (index, &x) in tensor.iter().enumerate() {
        assert_eq!(x, (index % 1000) as f32, "element {index}");
    }
}

#[test]
fn another_process_reads_the_tensor_and_writes_its_answer_in_place() {
    let pool = Pool::shared_memory(Config::default());
    let (tensor, expected) = shared_tensor(&pool);
    let handle = tensor.shm_handle().unwrap();
    let args = format!("{} {}", handle.offset, handle.len);
    let output = run_child("read_tensor", &args, Some(handle.fd));
    assert_child_answered(&output, &tensor, expected);
}

#[test]
fn an_unrelated_process_receives_the_handle_over_a_unix_socket() {
    let pool = Pool::shared_memory(Config::default());
    let (tensor, expected) = shared_tensor(&pool);
    let path = std::env::temp_dir().join(format!("heapworks-pool-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    // The child inherits nothing: it connects by path and gets the descriptor in a message.
    let child = spawn_child("receive_tensor", path.to_str().unwrap(), None);
    let (socket, _) = listener.accept().unwrap();
    tensor.shm_handle().unwrap().send_over(&socket).unwrap();
    let output = finish("receive_tensor", child);
    std::fs::remove_file(&path).unwrap();
    assert_child_answered(&output, &tensor, expected);
}

#[test]
fn a_received_handle_maps_the_senders_pages() {
    let pool = Pool::shared_memory(Config::default());
    let mut buf = pool.get_filled::<u32>(1000, 7).unwrap();
    let (ours, theirs) = UnixStream::pair().unwrap();
    buf.shm_handle().unwrap().send_over(&ours).unwrap();
    let received = ShmHandle::receive_from(&theirs).unwrap();
    assert_ne!(received.handle.fd, buf.shm_handle().unwrap().fd);
    assert_eq!(received.handle.len, 4000);
    assert_eq!(received.handle.pool, pool.id());
    let mapping = received.map().unwrap();
    drop(received);
    buf[999] = 8;
    // SAFETY: nobody writes the buffer while the slice lives.
    let seen = unsafe { mapping.as_slice::<u32>() };
    assert_eq!((seen[0], seen[999]), (7, 8));
}

#[test]
fn a_message_without_exactly_one_descriptor_is_rejected() {
    use std::io::Write;
    let expect_bad = |socket: &UnixStream, words: &str| {
        let error = ShmHandle::receive_from(socket).unwrap_err();
        assert!(matches!(error, PoolError::BadHandle { .. }), "{error}");
        assert!(error.to_string().contains(words), "{error}");
    };
    let (mut ours, theirs) = UnixStream::pair().unwrap();
    ours.write_all(&[0; 24]).unwrap();
    expect_bad(&theirs, "no descriptor");

    let pool = Pool::shared_memory(Config::default());
    let buf = pool.get_filled::<u8>(100, 1).unwrap();
    let handle = buf.shm_handle().unwrap();
    let error = handle.with_fd(-1).send_over(&ours).unwrap_err();
    assert!(matches!(error, PoolError::BadHandle { .. }), "{error}");

    let (first, second) = UnixStream::pair().unwrap();
    let fds = [handle.fd, first.as_raw_fd()].map(|fd| {
        // SAFETY: both descriptors are open for the duration of this test.
        unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
    });
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = rustix::net::SendAncillaryBuffer::new(&mut space);
    assert!(control.push(rustix::net::SendAncillaryMessage::ScmRights(&fds)));
    let message = [0u8; 24];
    rustix::net::sendmsg(
        &ours,
        &[std::io::IoSlice::new(&message)],
        &mut control,
        rustix::net::SendFlags::empty(),
    )
    .unwrap();
    expect_bad(&theirs, "more than one");
    drop(second);

    drop(ours);
    expect_bad(&theirs, "closed before");
}

#[test]
fn running_out_of_descriptors_is_an_error_and_the_pool_recovers() {
    let output = run_child("exhaust_descriptors", "", None);
    assert!(child_line(&output).starts_with("child: exhausted"));
}

#[test]
fn a_refused_file_size_is_an_error_and_the_pool_recovers() {
    let output = run_child("refuse_file_size", "", None);
    assert!(child_line(&output).starts_with("child: ftruncate refused"));
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

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

    /// Whatever offset and length a handle claims (what another process sent), mapping it
    /// succeeds exactly when the range is non-empty and inside the file, and then shows the
    /// file's bytes there; anything else is a `BadHandle` or an OS error, never a crash.
    #[test]
    fn any_claimed_range_maps_exactly_when_it_lies_in_the_file(
        offset in proptest::prop_oneof![0..20_000u64, proptest::num::u64::ANY],
        len in proptest::prop_oneof![0..20_000usize, proptest::num::usize::ANY],
    ) {
        let pool = Pool::shared_memory(Config::default());
        let mut buf = pool.get_filled::<u8>(10_000, 0).unwrap();
        for (index, byte) in buf.iter_mut().enumerate() {
            *byte = index as u8;
        }
        let file_len = 12_288u64; // 10 000 B rounded up to 4 KiB pages
        let handle = ShmHandle { offset, len, ..buf.shm_handle().unwrap() };
        let fits = len > 0 && offset.checked_add(len as u64).is_some_and(|end| end <= file_len);
        match SharedMapping::map(&handle) {
            Ok(mapping) => {
                proptest::prop_assert!(fits);
                // SAFETY: nothing writes the buffer while the slice lives.
                let seen: &[u8] = unsafe { mapping.as_slice() };
                proptest::prop_assert_eq!(seen.len(), len);
                let at = |i: u64| if i < 10_000 { i as u8 } else { 0 };
                proptest::prop_assert_eq!(seen[0], at(offset));
                proptest::prop_assert_eq!(seen[len - 1], at(offset + len as u64 - 1));
            }
            Err(error) => {
                proptest::prop_assert!(!fits, "{}", error);
                proptest::prop_assert!(
                    matches!(error, PoolError::BadHandle { .. } | PoolError::TooLarge { .. }),
                    "{}",
                    error
                );
            }
        }
    }
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
        "receive_tensor" => receive_tensor(&args),
        "refuse_file_size" => refuse_file_size(),
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
    answer(&SharedMapping::map(&handle).unwrap());
}

/// Connects to the parent's socket at path `args`, receives the tensor's handle, and answers.
fn receive_tensor(args: &str) {
    let socket = UnixStream::connect(args).unwrap();
    let received = ShmHandle::receive_from(&socket).unwrap();
    answer(&received.map().unwrap());
}

/// Sums the tensor in `mapping`, prints the sum, doubles it in place.
fn answer(mapping: &SharedMapping) {
    // SAFETY: the parent waits for this process to exit before it touches the tensor again.
    let tensor = unsafe { mapping.as_mut_slice::<f32>() };
    assert_eq!(tensor.len(), TENSOR);
    let sum: f64 = tensor.iter().map(|&x| f64::from(x)).sum();
    for x in tensor.iter_mut() {
        *x *= 2.0;
    }
    println!("child: sum {sum}");
}

/// Lowers this process's file-size limit to 1 MiB (its signal ignored), so that sizing a
/// shared buffer's file beyond it fails, then asks for 4 MiB.
fn refuse_file_size() {
    // SAFETY: ignoring SIGXFSZ changes only this child's signal disposition: the refused
    // ftruncate then fails with EFBIG instead of killing the process.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    set_limit(libc::RLIMIT_FSIZE, 1 << 20);
    let pool = Pool::shared_memory(Config::default());
    match pool.get::<u8>(4 << 20) {
        Err(PoolError::Os {
            operation, source, ..
        }) => {
            assert_eq!(operation, "ftruncate");
            assert_eq!(source.raw_os_error(), Some(libc::EFBIG));
        }
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("a 4 MiB file sized under a 1 MiB file-size limit"),
    }
    assert!(pool.get_filled::<u8>(64 << 10, 1).is_ok());
    println!("child: ftruncate refused for 4 MiB");
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
