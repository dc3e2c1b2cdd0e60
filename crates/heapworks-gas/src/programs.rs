//! Seed 000's three scenarios, each a program of the guests' programs build run on a list of
//! messages: NFT init -> mint -> burn (message by message), and the FT stress test message by
//! message (as gclient runs it) and within one execution (the seed's gtest figure).
//!
//! Invariant: the two FT scenarios send the same messages, so they differ only in how pages
//! are charged.

use crate::measure::Execution;
use crate::{ft, nft};

/// A scenario that runs one of the guests' programs.
pub struct ProgramScenario {
    pub name: String,
    /// The guest's export that handles a message.
    pub entry: &'static str,
    pub messages: Vec<Vec<u8>>,
    pub execution: Execution,
}

/// Seed 000's three scenarios: NFT init -> mint -> burn (message by message), and the FT
/// stress test message by message (gclient) and within one execution (gtest).
pub fn seed_scenarios(quick: bool) -> Vec<ProgramScenario> {
    let ft = ft::stress_messages(quick);
    let nft = nft::burn_test_messages();
    vec![
        ProgramScenario {
            name: format!(
                "NFT init -> mint -> burn (seed 000, {} messages)",
                nft.len()
            ),
            entry: "nft_handle",
            messages: nft,
            execution: Execution::PerMessage,
        },
        ProgramScenario {
            name: format!(
                "FT stress (seed 000's steps, {} messages), message by message",
                ft.len()
            ),
            entry: "ft_handle",
            messages: ft.clone(),
            execution: Execution::PerMessage,
        },
        ProgramScenario {
            name: format!(
                "FT stress (seed 000's steps, {} messages), one execution (gtest)",
                ft.len()
            ),
            entry: "ft_handle",
            messages: ft,
            execution: Execution::Single,
        },
    ]
}
