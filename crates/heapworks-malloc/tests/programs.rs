//! Real programs under `LD_PRELOAD`: each gives the same output as under glibc, and the
//! library's statistics (printed only by heapworks) prove it served the process. `.ci/setup`
//! installs every program used here; a test whose program is missing fails under CI (`CI` set)
//! and is skipped, saying so, elsewhere.

mod common;

use common::{assert_success, run_plain, run_preloaded, scratch_dir, stat};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the command built by `make` under glibc and under heapworks; the outputs must match.
fn same_as_glibc(what: &str, make: impl Fn() -> Command) -> Output {
    let glibc = run_plain(&mut make());
    assert_success(&glibc, &format!("{what} under glibc"));
    let heapworks = run_preloaded(&mut make());
    assert_success(&heapworks, &format!("{what} under heapworks"));
    // Bytes, not text: some outputs (xz's) are binary.
    assert!(
        heapworks.stdout == glibc.stdout,
        "{what}: output differs ({} bytes under heapworks, {} under glibc):\n{}\n---\n{}",
        heapworks.stdout.len(),
        glibc.stdout.len(),
        String::from_utf8_lossy(&heapworks.stdout[..heapworks.stdout.len().min(2000)]),
        String::from_utf8_lossy(&glibc.stdout[..glibc.stdout.len().min(2000)]),
    );
    assert!(
        stat(&heapworks, "thread caches:") >= 1,
        "{what}: not interposed"
    );
    heapworks
}

/// A maker of the command `program args...`, for [`same_as_glibc`].
fn command<A: Into<OsString>>(
    program: &'static str,
    args: impl IntoIterator<Item = A>,
) -> impl Fn() -> Command {
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    move || {
        let mut command = Command::new(program);
        command.args(&args);
        command
    }
}

/// Writes a generated input `name` in a scratch directory of its own; returns its path.
fn input_file(name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let path = scratch_dir(name).join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// Whether `program` is on the path. Under CI (`CI` set) a missing program fails the test:
/// there, `.ci/setup` installs them all, and a skip would hide that it did not.
fn installed(program: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        found || std::env::var_os("CI").is_none(),
        "{program} is not installed (.ci/setup installs it)"
    );
    if !found {
        eprintln!("{program} not installed: skipped");
    }
    found
}

#[test]
fn python_workload() {
    let script = "import json, re, collections\n\
        d = {str(i): [i] * (i % 7) for i in range(20000)}\n\
        s = json.dumps(d)\n\
        c = collections.Counter(re.findall(r'\\d+', s))\n\
        l = sorted(str(x * x) for x in range(30000))\n\
        print(len(s), c.most_common(3), l[:3], sum(map(len, l)))\n";
    same_as_glibc("python3", command("/usr/bin/python3", ["-c", script]));
}

#[test]
fn gcc_compiles() {
    let source = input_file(
        "hello.c",
        "#include <stdio.h>\nstruct s { int a[10]; };\nstatic int f(struct s *x) { int t = 0; \
         for (int i = 0; i < 10; i++) t += x->a[i] * i; return t; }\n\
         int main(void) { struct s v = {{1,2,3,4,5,6,7,8,9,10}}; printf(\"%d\\n\", f(&v)); return 0; }\n",
    );
    // Compile to assembly on stdout: the output is the compiler's work itself.
    let args = ["-O2", "-S", "-o", "-"].map(OsString::from);
    same_as_glibc(
        "gcc",
        command("gcc", args.into_iter().chain([source.into()])),
    );
}

#[test]
fn git_repository() {
    if !installed("git") {
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
    let lines: String = (0..50_000u64)
        .map(|i| format!("{:x} {}\n", i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40, i))
        .collect();
    let input = input_file("sort-input.txt", lines);
    let args = [OsString::from("-S"), "1M".into(), input.into()];
    same_as_glibc("sort", command("sort", args));
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

#[test]
fn perl_workload() {
    if !installed("perl") {
        return;
    }
    // Hashes, arrays, string building and a regex over them: Debian's perl uses the system
    // malloc (`usemymalloc=n`).
    let script = r#"my %h; for my $i (1..40000) { push @{$h{$i % 97}}, "k$i" x ($i % 5 + 1) }
        my $s = join ",", map { scalar @{$h{$_}} } sort { $a <=> $b } keys %h;
        my @w = sort map { sprintf "%x", $_ * 2654435761 % 1000003 } 1..30000;
        my $n = () = join(" ", @w) =~ /[a-f]{3}/g;
        print length($s), " $n $w[0] $w[-1]\n";"#;
    same_as_glibc("perl", command("perl", ["-e", script]));
}

#[test]
fn sqlite_queries() {
    if !installed("sqlite3") {
        return;
    }
    let sql = "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);\n\
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000)\n\
        INSERT INTO t SELECT i, printf('name-%d-%s', i % 977, hex(i * 7919)), i * 0.5 FROM n;\n\
        CREATE INDEX t_name ON t(name);\n\
        SELECT count(*), count(DISTINCT name), sum(v) FROM t;\n\
        SELECT name, count(*) AS c FROM t GROUP BY name ORDER BY c DESC, name LIMIT 5;\n\
        SELECT group_concat(id) FROM (SELECT id FROM t WHERE name LIKE 'name-12-%' ORDER BY id);\n";
    same_as_glibc("sqlite3", command("sqlite3", [":memory:", sql]));
}

#[test]
fn xz_compresses() {
    if !installed("xz") {
        return;
    }
    let text: String = (0..60_000u64)
        .map(|i| {
            format!(
                "{} {:x}\n",
                i % 1000,
                i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 44
            )
        })
        .collect();
    let input = input_file("xz-input.txt", text);
    // One thread: the compressed stream is then the same whatever the machine.
    let args = [
        OsString::from("-6"),
        "-T1".into(),
        "-c".into(),
        input.into(),
    ];
    same_as_glibc("xz", command("xz", args));
}

#[test]
fn jq_filters() {
    if !installed("jq") {
        return;
    }
    let records: Vec<String> = (0..8000)
        .map(|i| {
            format!(
                r#"{{"id":{i},"tag":"t{}","xs":[{},{},{}]}}"#,
                i % 13,
                i,
                i * 2,
                i % 7
            )
        })
        .collect();
    let input = input_file("jq-input.json", format!("[{}]", records.join(",")));
    let filter = "group_by(.tag) | map({tag: .[0].tag, n: length, s: (map(.xs | add) | add)})";
    let args = [OsString::from("-c"), filter.into(), input.into()];
    same_as_glibc("jq", command("jq", args));
}

#[test]
fn bash_script() {
    if !installed("bash") {
        return;
    }
    // Associative arrays, string growth and substitutions, all inside the shell.
    let script = r#"declare -A seen; s=""
        for ((i = 0; i < 6000; i++)); do k="key$((i * 7919 % 1009))"; seen[$k]=$((${seen[$k]:-0} + 1)); s+="${k:3:2}"; done
        echo "${#seen[@]} ${#s} ${s//1/}" | cksum"#;
    same_as_glibc("bash", command("bash", ["-c", script]));
}

#[test]
fn awk_counts_words() {
    if !installed("awk") {
        return;
    }
    let text: String = (0..40_000u64)
        .map(|i| {
            format!(
                "w{} w{} x{}\n",
                i % 503,
                i % 31,
                i.wrapping_mul(2_654_435_761) % 9973
            )
        })
        .collect();
    let input = input_file("awk-input.txt", text);
    let program =
        "{ for (i = 1; i <= NF; i++) n[$i]++ } END { for (w in n) if (n[w] > 80) k++; print k, length(n) }";
    same_as_glibc(
        "awk",
        command("awk", [OsString::from(program), input.into()]),
    );
}
