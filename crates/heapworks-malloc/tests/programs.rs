//! Real programs under `LD_PRELOAD`: each gives the same output as under glibc, and the
//! library's statistics (printed only by heapworks) prove it served the process.

mod common;

use common::{assert_success, run_plain, run_preloaded, scratch_dir, stat};
use std::path::Path;
use std::process::{Command, Output};

/// Runs the command built by `make` under glibc and under heapworks; the outputs must match.
fn same_as_glibc(what: &str, make: impl Fn() -> Command) -> Output {
    let glibc = run_plain(&mut make());
    assert_success(&glibc, &format!("{what} under glibc"));
    let heapworks = run_preloaded(&mut make());
    assert_success(&heapworks, &format!("{what} under heapworks"));
    assert_eq!(
        String::from_utf8_lossy(&heapworks.stdout),
        String::from_utf8_lossy(&glibc.stdout),
        "{what}: output differs"
    );
    assert!(
        stat(&heapworks, "thread caches:") >= 1,
        "{what}: not interposed"
    );
    heapworks
}

fn installed(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|output| output.status.success())
}

#[test]
fn python_workload() {
    let script = "import json, re, collections\n\
        d = {str(i): [i] * (i % 7) for i in range(20000)}\n\
        s = json.dumps(d)\n\
        c = collections.Counter(re.findall(r'\\d+', s))\n\
        l = sorted(str(x * x) for x in range(30000))\n\
        print(len(s), c.most_common(3), l[:3], sum(map(len, l)))\n";
    same_as_glibc("python3", || {
        let mut command = Command::new("/usr/bin/python3");
        command.args(["-c", script]);
        command
    });
}

#[test]
fn gcc_compiles() {
    let dir = scratch_dir("gcc");
    let source = dir.join("hello.c");
    std::fs::write(
        &source,
        "#include <stdio.h>\nstruct s { int a[10]; };\nstatic int f(struct s *x) { int t = 0; \
         for (int i = 0; i < 10; i++) t += x->a[i] * i; return t; }\n\
         int main(void) { struct s v = {{1,2,3,4,5,6,7,8,9,10}}; printf(\"%d\\n\", f(&v)); return 0; }\n",
    )
    .unwrap();
    // Compile to assembly on stdout: the output is the compiler's work itself.
    same_as_glibc("gcc", || {
        let mut command = Command::new("gcc");
        command.args(["-O2", "-S", "-o", "-"]).arg(&source);
        command
    });
}

#[test]
fn git_repository() {
    if !installed("git") {
        eprintln!("git not installed: skipped");
        return;
    }
    let base = scratch_dir("git");
    let run_in = |dir: &Path, args: &[&str], preload: bool| {
        let mut command = Command::new("git");
        command
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_DATE", "2000-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2000-01-01T00:00:00Z")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir);
        let output = if preload {
            run_preloaded(&mut command)
        } else {
            run_plain(&mut command)
        };
        assert_success(&output, &format!("git {args:?}"));
        output
    };
    let mut logs = Vec::new();
    for preload in [false, true] {
        let dir = base.join(if preload { "heapworks" } else { "glibc" });
        std::fs::create_dir_all(&dir).unwrap();
        run_in(&dir, &["init", "-q", "-b", "main"], preload);
        for i in 0..5 {
            std::fs::write(
                dir.join(format!("f{i}.txt")),
                format!("{i}\n").repeat(100 * i + 1),
            )
            .unwrap();
            run_in(&dir, &["add", "."], preload);
            run_in(
                &dir,
                &[
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@e",
                    "commit",
                    "-q",
                    "-m",
                    &format!("c{i}"),
                ],
                preload,
            );
        }
        let log = run_in(&dir, &["log", "--stat", "--format=%H %s"], preload);
        if preload {
            assert!(stat(&log, "thread caches:") >= 1);
        }
        logs.push(String::from_utf8_lossy(&log.stdout).into_owned());
    }
    assert_eq!(logs[0], logs[1], "git log differs");
}

#[test]
fn sort_lines() {
    let dir = scratch_dir("sort");
    let input = dir.join("input.txt");
    let lines: String = (0..50_000u64)
        .map(|i| format!("{:x} {}\n", i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40, i))
        .collect();
    std::fs::write(&input, lines).unwrap();
    same_as_glibc("sort", || {
        let mut command = Command::new("sort");
        command.arg("-S").arg("1M").arg(&input);
        command
    });
}

#[test]
fn make_builds() {
    let dir = scratch_dir("make");
    std::fs::write(
        dir.join("Makefile"),
        "OBJS := $(foreach i,1 2 3 4 5 6 7 8,part$(i).txt)\n\
         all: total.txt\n\t@cat total.txt\n\
         part%.txt:\n\t@echo part $* $(words $(OBJS)) > $@\n\
         total.txt: $(OBJS)\n\t@cat $^ | sort > $@\n\
         clean:\n\t@rm -f *.txt\n",
    )
    .unwrap();
    same_as_glibc("make", || {
        let mut command = Command::new("sh");
        command
            .args(["-c", "make -s clean && make -s -j2"])
            .current_dir(&dir);
        command
    });
}
