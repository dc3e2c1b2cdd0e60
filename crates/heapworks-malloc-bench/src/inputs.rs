//! Generated inputs of the real programs: a C file for gcc, a git repository, lines for sort,
//! a Makefile for make, a script for perl and SQL for sqlite3. Every byte is a function of the size asked for, so every run and
//! every malloc sees the same input.

use std::fmt::Write;

use heapworks_bench::rng::splitmix64;

/// A C file of `functions` functions (structs, loops, switches, string formatting) and a
/// `main` that calls them all: work for gcc's optimizer.
pub fn c_source(functions: usize) -> String {
    let mut text = String::from("#include <stdio.h>\n#include <string.h>\n\n");
    for f in 0..functions {
        let len = f % 8 + 2;
        let _ = write!(
            text,
            "struct rec{f} {{ int a[{len}]; double d; const char *name; }};\n\
             static int f{f}(struct rec{f} *r, int x) {{\n\
             \tint t = 0; char buf[64];\n\
             \tfor (int i = 0; i < {len}; i++) t += r->a[i] * (x + i) ^ (t >> 3);\n\
             \tswitch ((t + x) % 5) {{\n\
             \tcase 0: t += (int)strlen(r->name); break;\n\
             \tcase 1: t -= snprintf(buf, sizeof buf, \"%s-%d\", r->name, x); break;\n\
             \tcase 2: t ^= (int)(r->d * {f}.5); break;\n\
             \tdefault: for (int j = x % 7; j > 0; j--) t = t * 31 + j;\n\
             \t}}\n\
             \treturn t + {f};\n}}\n\n"
        );
    }
    text.push_str("int main(int argc, char **argv) {\n\tlong s = 0;\n");
    for f in 0..functions {
        let _ = writeln!(
            text,
            "\t{{ struct rec{f} r = {{{{{f}}}, {f}.25, \"f{f}\"}}; s += f{f}(&r, argc + {f}); }}"
        );
    }
    text.push_str("\tprintf(\"%ld %s\\n\", s, argv[0]);\n\treturn 0;\n}\n");
    text
}

/// Files of the generated git repository, and lines per file.
const GIT_FILES: u64 = 20;
const GIT_LINES: u64 = 200;

/// A `git fast-import` stream of `commits` commits on `refs/heads/main`, each rewriting three
/// of twenty files of 200 lines, about a quarter of whose lines change.
pub fn git_stream(commits: u64) -> String {
    let mut stream = String::new();
    for commit in 0..commits {
        let message = format!("commit {commit}\n");
        let date = 946_684_800 + commit * 3600;
        let _ = write!(
            stream,
            "commit refs/heads/main\ncommitter Bench <bench@example.com> {date} +0000\n\
             data {}\n{message}",
            message.len()
        );
        for k in 0..3 {
            let file = (commit * 7 + k) % GIT_FILES;
            let content = git_file(file, commit);
            let _ = write!(
                stream,
                "M 100644 inline src/file{file}.txt\ndata {}\n{content}",
                content.len()
            );
        }
        stream.push('\n');
    }
    stream
}

/// The content of `file` as of `commit`: line `l` changes every `1 + l % 4` commits.
fn git_file(file: u64, commit: u64) -> String {
    (0..GIT_LINES)
        .map(|line| {
            let mut state = (file << 40) ^ (line << 20) ^ (commit / (1 + line % 4));
            format!("{file}:{line}: {:016x}\n", splitmix64(&mut state))
        })
        .collect()
}

/// `count` lines of a hexadecimal key and a word, in no order.
pub fn sort_lines(count: u64) -> String {
    const WORDS: [&str; 8] = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
    ];
    let mut state = 4;
    (0..count)
        .map(|i| {
            let key = splitmix64(&mut state);
            format!("{key:016x} {} {i}\n", WORDS[(key % 8) as usize])
        })
        .collect()
}

/// A Makefile of `targets` targets, each with its own variable and up to two prerequisites,
/// and an `all` that names them all: work for make's parser and dependency graph (`make -n`
/// prints every recipe without running it).
pub fn makefile(targets: usize) -> String {
    let mut text = String::from(".PHONY: all\nIDS :=");
    for t in 0..targets {
        let _ = write!(text, " {t}");
    }
    text.push_str("\nall: $(patsubst %,t%,$(IDS))\n\n");
    for t in 0..targets {
        let prerequisites: String = [t / 2, t / 3]
            .iter()
            .filter(|&&p| p < t)
            .map(|p| format!(" t{p}"))
            .collect();
        let _ = write!(
            text,
            "FLAGS_{t} := -DT={t} -O$(words $(wordlist 1,{},$(IDS)))\n\
             t{t}:{prerequisites}\n\t@echo build $@ from [$^] with $(FLAGS_{t})\n\n",
            t % 3 + 1
        );
    }
    text
}

/// A perl script over `items` items: a hash of arrays of strings built by repetition and
/// interpolation, string buffers grown by appending (perl's `realloc`s), a sort of formatted
/// numbers, and a regex count over their join. Prints a summary line.
pub fn perl_script(items: u64) -> String {
    format!(
        "use strict; use warnings;\n\
         my %groups; my $text = '';\n\
         for my $i (1 .. {items}) {{\n\
         \tpush @{{$groups{{$i % 97}}}}, \"k$i\" x ($i % 5 + 1);\n\
         \t$text .= chr(97 + $i % 26) if $i % 3 == 0;\n\
         }}\n\
         my $sizes = join ',', map {{ scalar @{{$groups{{$_}}}} }} sort {{ $a <=> $b }} keys %groups;\n\
         my @words = sort map {{ sprintf '%x', $_ * 2654435761 % 1000003 }} 1 .. {half};\n\
         my $count = () = join(' ', @words) =~ /[a-f]{{3}}/g;\n\
         delete $groups{{$_}} for grep {{ $_ % 2 }} keys %groups;\n\
         print length($sizes), \" $count $words[0] $words[-1] \", length($text), \" \", scalar(keys %groups), \"\\n\";\n",
        half = items / 2
    )
}

/// SQL for sqlite3 on an in-memory database of `rows` rows: a table filled by a recursive
/// query with formatted text, an index built over it, an aggregate, a grouped sort and a
/// string aggregate (sqlite's page cache, B-tree cells and result strings all come from
/// `malloc`).
pub fn sql_script(rows: u64) -> String {
    format!(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);\n\
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})\n\
         INSERT INTO t SELECT i, printf('name-%d-%s', i % 977, hex(i * 7919)), i * 0.5 FROM n;\n\
         CREATE INDEX t_name ON t(name);\n\
         SELECT count(*), count(DISTINCT name), sum(v) FROM t;\n\
         SELECT substr(name, 1, 9) AS p, count(*) AS c FROM t GROUP BY p ORDER BY c DESC, p LIMIT 5;\n\
         SELECT length(group_concat(id)) FROM (SELECT id FROM t WHERE name LIKE 'name-12-%' ORDER BY v DESC);\n\
         DELETE FROM t WHERE id % 3 = 0;\n\
         SELECT count(*), max(name) FROM t;\n"
    )
}
