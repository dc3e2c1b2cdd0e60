//! The scenarios: sequences of messages, each a sequence of allocator calls on blocks named by
//! id, the same for every guest. Deterministic: the random churn draws from a fixed seed.
//!
//! Invariant: a scenario frees only live ids and reallocates only live ids, so every guest
//! receives valid calls (the host keeps each block's layout).

/// One allocator call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `alloc(size, align)` into `id`.
    Malloc { id: usize, size: u32, align: u32 },
    /// `alloc_zeroed(size, align)` into `id`.
    Calloc { id: usize, size: u32, align: u32 },
    /// `realloc` of `id` to `size`.
    Realloc { id: usize, size: u32 },
    /// `dealloc` of `id`.
    Free { id: usize },
}

/// `alloc(size, 8)` into `id`.
fn malloc(id: usize, size: u32) -> Op {
    Op::Malloc { id, size, align: 8 }
}

/// `alloc_zeroed(size, 8)` into `id`.
fn calloc(id: usize, size: u32) -> Op {
    Op::Calloc { id, size, align: 8 }
}

/// A call and whether it counts in the tables (warm-up calls do not).
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub op: Op,
    pub measured: bool,
}

/// A named scenario: messages of steps.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub messages: Vec<Vec<Step>>,
}

/// Builds the steps of one message.
#[derive(Default)]
struct Message {
    steps: Vec<Step>,
}

impl Message {
    fn run(&mut self, op: Op, measured: bool) {
        self.steps.push(Step { op, measured });
    }
}

/// The micro scenarios, small enough for CI in `quick` mode.
pub fn micro(quick: bool) -> Vec<Scenario> {
    let reps = if quick { 10 } else { 100 };
    let mut all = Vec::new();
    for size in [8u32, 81, 1024, 65536] {
        all.push(first_calls(size));
        all.push(steady(size, reps));
    }
    all.push(realloc_chain());
    all.push(churn(if quick { 400 } else { 4000 }, 0x5eed));
    all.push(ft_messages(if quick { 5 } else { 30 }));
    all
}

/// A fresh heap's first malloc, calloc, realloc (to twice the size) and frees, one message.
fn first_calls(size: u32) -> Scenario {
    let mut m = Message::default();
    m.run(malloc(0, size), true);
    m.run(calloc(1, size), true);
    m.run(
        Op::Realloc {
            id: 0,
            size: size * 2,
        },
        true,
    );
    m.run(Op::Free { id: 0 }, true);
    m.run(Op::Free { id: 1 }, true);
    Scenario {
        name: format!("first {}", size_name(size)),
        messages: vec![m.steps],
    }
}

/// Steady state: a warm-up message, then `reps` malloc+free pairs, calloc+free pairs and
/// reallocs to 1.5× in the next message.
fn steady(size: u32, reps: usize) -> Scenario {
    let mut warm = Message::default();
    for id in 0..8 {
        warm.run(malloc(id, size), false);
    }
    for id in 0..8 {
        warm.run(Op::Free { id }, false);
    }
    let mut m = Message::default();
    for _ in 0..reps {
        m.run(malloc(0, size), true);
        m.run(Op::Free { id: 0 }, true);
        m.run(calloc(0, size), true);
        m.run(Op::Free { id: 0 }, true);
        m.run(malloc(0, size), false);
        m.run(
            Op::Realloc {
                id: 0,
                size: size + size / 2,
            },
            true,
        );
        m.run(Op::Free { id: 0 }, false);
    }
    Scenario {
        name: format!("steady {}", size_name(size)),
        messages: vec![warm.steps, m.steps],
    }
}

/// One block grown from 100 B to 64 KiB by reallocs of 1.5×, in one message.
fn realloc_chain() -> Scenario {
    let mut m = Message::default();
    let mut size = 100u32;
    m.run(malloc(0, size), true);
    while size < 65536 {
        size = (size + size / 2).min(65536);
        m.run(Op::Realloc { id: 0, size }, true);
    }
    m.run(Op::Free { id: 0 }, true);
    Scenario {
        name: "realloc chain 100 B to 64 KiB".into(),
        messages: vec![m.steps],
    }
}

/// `ops` random calls on 8–256 B blocks (at most 200 live), 100 calls a message, fixed seed.
fn churn(ops: usize, seed: u64) -> Scenario {
    let mut rng = seed;
    let mut next = move |bound: u64| {
        // xorshift64*: deterministic and good enough to pick sizes and victims.
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        (rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) % bound
    };
    let mut live: Vec<usize> = Vec::new();
    let mut fresh = 0;
    let mut messages = Vec::new();
    let mut m = Message::default();
    for n in 0..ops {
        let roll = next(10);
        let size = 8 + next(249) as u32;
        if live.is_empty() || (roll < 5 && live.len() < 200) {
            let op = if roll == 0 {
                calloc(fresh, size)
            } else {
                malloc(fresh, size)
            };
            m.run(op, true);
            live.push(fresh);
            fresh += 1;
        } else if roll < 7 {
            let id = live[next(live.len() as u64) as usize];
            m.run(Op::Realloc { id, size }, true);
        } else {
            let id = live.swap_remove(next(live.len() as u64) as usize);
            m.run(Op::Free { id }, true);
        }
        if n % 100 == 99 {
            messages.push(std::mem::take(&mut m.steps));
        }
    }
    for id in live {
        m.run(Op::Free { id }, true);
    }
    messages.push(m.steps);
    Scenario {
        name: format!("churn 8-256 B, {ops} calls"),
        messages,
    }
}

/// An FT-like message, repeated: two `malloc(81)` and two frees per message, over a heap that
/// keeps one long-lived block between messages.
fn ft_messages(count: usize) -> Scenario {
    let mut setup = Message::default();
    setup.run(malloc(0, 640), false);
    let mut messages = vec![setup.steps];
    for _ in 0..count {
        let mut m = Message::default();
        m.run(malloc(1, 81), true);
        m.run(malloc(2, 81), true);
        m.run(Op::Free { id: 1 }, true);
        m.run(Op::Free { id: 2 }, true);
        messages.push(m.steps);
    }
    Scenario {
        name: format!("FT message x{count} (2x malloc 81 + 2x free)"),
        messages,
    }
}

fn size_name(size: u32) -> String {
    if size >= 1024 && size.is_multiple_of(1024) {
        format!("{} KiB", size / 1024)
    } else {
        format!("{size} B")
    }
}
