//! A fungible-token program over Rust collections, the workload of seed 000's FT stress test.
//!
//! A message is read into a fresh `Vec<u8>` (as Gear's `msg::load` does), decoded into an
//! owned [`Action`] (account ids as owned 32-byte `Vec<u8>`s), applied to balances in a
//! `BTreeMap<Vec<u8>, u128>`, and answered with a reply encoded into a fresh `Vec<u8>`.
//!
//! Invariant: the state lives in a `static` across messages and only `ft_handle` touches it.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::program;

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
    let payload = program::load(len);
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
    program::reply(&reply);
    1
}
