//! Seed 000's "NFT init → mint → burn" as messages for the guests' NFT program
//! (`guests/entries/src/nft.rs`), after the steps of Gear's `burn-test` (node tests of the
//! non-fungible-token contract 0.2.10): init a collection ("MyToken", at most 100 tokens, the
//! sender the only minter), mint one token with the test's metadata, burn it, then burn token
//! 666 under the same transaction id, which gets the recorded answer of the first burn.
//!
//! Invariant: the list is fixed (the seed gives one mint and one burn; quick mode is the same
//! four messages), so every guest gets the same messages.

use crate::ft::account;

/// The sender of every message: the collection's owner and only minter.
const SENDER: u64 = 1;

/// Appends a string as the program reads it: a `u32` length, then its bytes.
fn put_string(message: &mut Vec<u8>, text: &str) {
    message.extend_from_slice(&(text.len() as u32).to_le_bytes());
    message.extend_from_slice(text.as_bytes());
}

/// A message of `tag` from `SENDER`.
fn message(tag: u8) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend_from_slice(&account(SENDER));
    m
}

fn init(name: &str, description: &str, max_mint_count: u32) -> Vec<u8> {
    let mut m = message(0);
    put_string(&mut m, name);
    put_string(&mut m, description);
    m.extend_from_slice(&max_mint_count.to_le_bytes());
    m.push(1);
    m.extend_from_slice(&account(SENDER));
    m
}

fn mint(transaction: u64, metadata: [&str; 4]) -> Vec<u8> {
    let mut m = message(1);
    m.extend_from_slice(&transaction.to_le_bytes());
    for text in metadata {
        put_string(&mut m, text);
    }
    m
}

fn burn(transaction: u64, token: u64) -> Vec<u8> {
    let mut m = message(2);
    m.extend_from_slice(&transaction.to_le_bytes());
    m.extend_from_slice(&token.to_le_bytes());
    m
}

/// The burn-test's messages: init, mint, burn, and the repeated burn.
pub fn burn_test_messages() -> Vec<Vec<u8>> {
    vec![
        init("MyToken", "My token", 100),
        mint(0, ["CryptoKitty", "Description", "http://", "http://"]),
        burn(1, 0),
        burn(1, 666),
    ]
}
