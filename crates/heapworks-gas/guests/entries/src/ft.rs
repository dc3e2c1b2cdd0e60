//! A fungible-token program over Rust collections, the workload of seed 000's FT stress test,
//! and the allocator wrapper that marks every allocator call for the host's meter.
//!
//! A message is read into a fresh `Vec<u8>` (as Gear's `msg::load` does), decoded into an
//! owned [`Action`] (account ids as owned 32-byte `Vec<u8>`s), applied to balances in a
//! `BTreeMap<Vec<u8>, u128>`, and answered with a reply encoded into a fresh `Vec<u8>`.
//!
//! Invariant: every allocator call the program makes runs between `gas_mark(kind)` and
//! `gas_mark(END)`, and nothing else does.

extern crate alloc;

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::alloc::{GlobalAlloc, Layout};

/// The marks' kinds (the host's order: malloc, calloc, realloc, free; then the end).
const MALLOC: i32 = 0;
const CALLOC: i32 = 1;
const REALLOC: i32 = 2;
const FREE: i32 = 3;
const END: i32 = 4;

#[link(wasm_import_module = "env")]
extern "C" {
    /// Tells the host an allocator call of `kind` starts (or ends, `END`).
    fn gas_mark(kind: i32);
    /// Copies the current message's payload into `[ptr, ptr + len)`.
    fn gas_read(ptr: *mut u8, len: usize);
    /// Hands the reply `[ptr, ptr + len)` to the host.
    fn gas_reply(ptr: *const u8, len: usize);
}

/// A global allocator whose every call is marked for the host.
pub struct Metered<A>(pub A);

fn marked<T>(kind: i32, call: impl FnOnce() -> T) -> T {
    // SAFETY: host imports without preconditions.
    unsafe { gas_mark(kind) };
    let result = call();
    // SAFETY: as above.
    unsafe { gas_mark(END) };
    result
}

// SAFETY: every call is forwarded unchanged to `A`.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Metered<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded.
        marked(MALLOC, || unsafe { self.0.alloc(layout) })
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded.
        marked(CALLOC, || unsafe { self.0.alloc_zeroed(layout) })
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded.
        marked(REALLOC, || unsafe { self.0.realloc(ptr, layout, new_size) })
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded.
        marked(FREE, || unsafe { self.0.dealloc(ptr, layout) })
    }
}

/// A decoded message.
enum Action {
    Mint {
        to: Vec<u8>,
        amount: u128,
    },
    Transfer {
        from: Vec<u8>,
        to: Vec<u8>,
        amount: u128,
    },
    Balance {
        of: Vec<u8>,
    },
    TotalSupply,
}

/// The program's state.
struct Token {
    balances: BTreeMap<Vec<u8>, u128>,
    total_supply: u128,
}

static mut TOKEN: Option<Token> = None;

fn account(bytes: &[u8]) -> Option<Vec<u8>> {
    bytes.get(..32).map(<[u8]>::to_vec)
}

fn amount(bytes: &[u8]) -> Option<u128> {
    Some(u128::from_le_bytes(bytes.get(..16)?.try_into().ok()?))
}

/// Decodes `[tag][account 32 B]...[amount 16 B]`.
fn decode(payload: &[u8]) -> Option<Action> {
    let (&tag, rest) = payload.split_first()?;
    Some(match tag {
        0 => Action::Mint {
            to: account(rest)?,
            amount: amount(rest.get(32..)?)?,
        },
        1 => Action::Transfer {
            from: account(rest)?,
            to: account(rest.get(32..)?)?,
            amount: amount(rest.get(64..)?)?,
        },
        2 => Action::Balance { of: account(rest)? },
        3 => Action::TotalSupply,
        _ => return None,
    })
}

impl Token {
    fn apply(&mut self, action: Action) -> Vec<u8> {
        let mut reply = Vec::new();
        match action {
            Action::Mint { to, amount } => {
                *self.balances.entry(to.clone()).or_insert(0) += amount;
                self.total_supply += amount;
                reply.push(0);
                reply.extend_from_slice(&to);
                reply.extend_from_slice(&amount.to_le_bytes());
            }
            Action::Transfer { from, to, amount } => {
                let ok = self.balances.get(&from).is_some_and(|&b| b >= amount);
                if ok {
                    if let Some(balance) = self.balances.get_mut(&from) {
                        *balance -= amount;
                    }
                    *self.balances.entry(to.clone()).or_insert(0) += amount;
                }
                reply.push(if ok { 1 } else { 0xff });
                reply.extend_from_slice(&from);
                reply.extend_from_slice(&to);
                reply.extend_from_slice(&amount.to_le_bytes());
            }
            Action::Balance { of } => {
                let balance = self.balances.get(&of).copied().unwrap_or(0);
                reply.push(2);
                reply.extend_from_slice(&balance.to_le_bytes());
            }
            Action::TotalSupply => {
                reply.push(3);
                reply.extend_from_slice(&self.total_supply.to_le_bytes());
            }
        }
        reply
    }
}

/// Handles one message of `len` bytes; 1 if it decoded, 0 if not.
#[no_mangle]
pub extern "C" fn ft_handle(len: usize) -> i32 {
    let mut payload = Vec::with_capacity(len);
    // SAFETY: the host writes `len` bytes into the vector's capacity.
    unsafe {
        gas_read(payload.as_mut_ptr(), len);
        payload.set_len(len);
    }
    let Some(action) = decode(&payload) else {
        return 0;
    };
    drop(payload);
    // SAFETY: one message at a time (wasm32 without threads), and this is the only reference.
    let slot: &mut Option<Token> = unsafe { &mut *core::ptr::addr_of_mut!(TOKEN) };
    let token = slot.get_or_insert_with(|| Token {
        balances: BTreeMap::new(),
        total_supply: 0,
    });
    let reply = token.apply(action);
    // SAFETY: the reply is valid for its length.
    unsafe { gas_reply(reply.as_ptr(), reply.len()) };
    1
}
