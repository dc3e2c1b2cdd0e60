//! Seed 000's program scenarios on real guests: the NFT init -> mint -> burn and the FT stress
//! test, message by message and within one execution. The figures must be sane (gas spent,
//! call counts that follow from the messages), the same on two runs, and the two FT variants
//! must differ only in what pages cost.

use heapworks_gas::guests::{self, GUESTS};
use heapworks_gas::machine::Machine;
use heapworks_gas::measure::{self, Execution, Outcome};
use heapworks_gas::programs::{self, ProgramScenario};

const MAX_PAGES: u32 = 4096;

/// The FT messages the tests send: the quick list's first 300 (every kind of message, and
/// seconds in a debug build).
const FT_MESSAGES: usize = 300;

fn program_guest(name: &str) -> Vec<u8> {
    let dir = guests::build_programs().expect("building the program guests");
    let guest = GUESTS
        .iter()
        .find(|g| g.name == name)
        .expect("a known guest");
    std::fs::read(dir.join(guest.file)).expect("reading the guest")
}

fn scenario(entry: &str, execution: Execution) -> ProgramScenario {
    programs::seed_scenarios(true)
        .into_iter()
        .find(|p| p.entry == entry && p.execution == execution)
        .expect("the scenario exists")
}

fn run(wasm: &[u8], p: &ProgramScenario, messages: usize) -> Outcome {
    let messages = &p.messages[..messages.min(p.messages.len())];
    measure::run_program(wasm, p.entry, messages, p.execution, MAX_PAGES)
        .unwrap_or_else(|e| panic!("{}: {e}", p.name))
}

fn counts(o: &Outcome) -> [u64; 4] {
    [
        o.malloc.count,
        o.calloc.count,
        o.realloc.count,
        o.free.count,
    ]
}

/// The replies of `messages` sent one by one to a fresh instance of `wasm`.
fn replies(wasm: &[u8], entry: &str, messages: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut machine = Machine::new(wasm, MAX_PAGES).unwrap();
    messages
        .iter()
        .map(|m| {
            machine.begin_message();
            machine.handle(entry, m).unwrap();
            machine.last_reply().to_vec()
        })
        .collect()
}

/// Account `user`'s id as the scenarios write it: its number, little-endian, in 32 bytes.
fn account(user: u8) -> Vec<u8> {
    let mut id = vec![0; 32];
    id[0] = user;
    id
}

/// Every message reads its payload into a fresh vector and drops it: at least one malloc and
/// one free a message; nothing is freed that was not allocated.
fn assert_sane(o: &Outcome, messages: u64) {
    assert!(o.malloc.count >= messages, "{o:?}");
    assert!(o.free.count >= messages, "{o:?}");
    assert!(o.free.count <= o.malloc.count + o.calloc.count, "{o:?}");
    assert!(
        o.instruction_gas > 0 && o.page_gas > 0 && o.program_gas > 0,
        "{o:?}"
    );
    assert!(o.malloc.min > 0 && o.malloc.min <= o.malloc.avg() && o.malloc.avg() <= o.malloc.max);
    assert!(o.pages_touched > 0);
}

#[test]
fn nft_burn_test_is_sane_and_deterministic() {
    let nft = scenario("nft_handle", Execution::PerMessage);
    assert_eq!(nft.messages.len(), 4, "init, mint, burn, repeated burn");
    let heapworks = program_guest("heapworks");
    let first = run(&heapworks, &nft, usize::MAX);
    assert_sane(&first, 4);
    // The zero actor id (`vec![0; 32]`) is the only zeroed allocation: one for the mint's
    // event, one for the burn's; the repeated burn clones the recorded event (a malloc).
    assert_eq!(first.calloc.count, 2, "{first:?}");
    // The mint's token list and the replies grow: reallocs.
    assert!(first.realloc.count > 0, "{first:?}");
    assert_eq!(first, run(&heapworks, &nft, usize::MAX), "two runs differ");
    // The program's calls do not depend on the allocator.
    let dlmalloc = run(&program_guest("dlmalloc-0.2.14"), &nft, usize::MAX);
    assert_eq!(counts(&first), counts(&dlmalloc));
}

#[test]
fn ft_in_one_execution_differs_only_in_pages() {
    let per_message = scenario("ft_handle", Execution::PerMessage);
    let single = scenario("ft_handle", Execution::Single);
    assert_eq!(per_message.messages, single.messages);
    let wasm = program_guest("heapworks-front");
    let gclient = run(&wasm, &per_message, FT_MESSAGES);
    let gtest = run(&wasm, &single, FT_MESSAGES);
    assert_sane(&gclient, FT_MESSAGES as u64);
    assert_sane(&gtest, FT_MESSAGES as u64);
    // No zeroed allocation in the FT program.
    assert_eq!(gclient.calloc.count, 0);
    // The same calls on the same heap: the same instructions, in the allocator and around it.
    assert_eq!(counts(&gclient), counts(&gtest));
    assert_eq!(gclient.instruction_gas, gtest.instruction_gas);
    // Pages charged once for the run instead of once a message.
    assert!(
        gtest.page_gas < gclient.page_gas,
        "{gtest:?} vs {gclient:?}"
    );
    assert!(gtest.pages_touched < gclient.pages_touched);
    assert_eq!(gtest, run(&wasm, &single, FT_MESSAGES), "two runs differ");
}

#[test]
fn the_programs_answer_as_their_contracts_do() {
    let wasm = program_guest("heapworks-front");
    let nft = scenario("nft_handle", Execution::PerMessage);
    let r = replies(&wasm, nft.entry, &nft.messages);
    let mut init = vec![1];
    init.extend(account(1));
    init.extend(7u32.to_le_bytes());
    init.extend(b"MyToken");
    init.extend(8u32.to_le_bytes());
    init.extend(b"My token");
    assert_eq!(r[0], init);
    let transfer = |from: Vec<u8>, to: Vec<u8>| [vec![0], from, to, vec![0; 8]].concat();
    assert_eq!(r[1], transfer(vec![0; 32], account(1)), "mint of token 0");
    assert_eq!(r[2], transfer(account(1), vec![0; 32]), "burn of token 0");
    assert_eq!(
        r[3], r[2],
        "a repeated transaction gets the recorded answer"
    );

    // FT: total supply 0, a mint of 1 000 000 to user 1, 20 transfers of 6 000 from user 1 to
    // users 1..=20 (the first to itself), then user 1's balance.
    let ft = scenario("ft_handle", Execution::PerMessage);
    let r = replies(&wasm, ft.entry, &ft.messages[..23]);
    assert_eq!(r[0], [vec![3], vec![0; 16]].concat());
    assert_eq!(
        r[22],
        [vec![2], (1_000_000u128 - 19 * 6_000).to_le_bytes().to_vec()].concat()
    );
}
