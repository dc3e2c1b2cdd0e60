//! The C mallocs as peers: "just use a better malloc" is what a user tries first. Each peer
//! runs `inline_without_pool` (`vec![v; n]`) in a process of its own, this executable run
//! again as the hidden `pool-probe` command ([`probe`](super::probe)) with the malloc
//! `LD_PRELOAD`ed (nothing for glibc), found and built as `bench --malloc` does ([`Lineup`]).
//! A peer whose library is missing is a `missing` cell, not an error.

use heapworks_malloc_bench::libraries::{CMalloc, Lineup};

/// The mallocs the issue names as peers, in column order.
pub const PEERS: [CMalloc; 4] = [
    CMalloc::Glibc,
    CMalloc::Heapworks,
    CMalloc::Mimalloc,
    CMalloc::Jemalloc,
];

/// The column name of a peer, e.g. `vec+mimalloc` (never a bare malloc name: `heapworks`
/// would become the ratios' baseline).
pub fn column_name(malloc: CMalloc) -> String {
    match malloc {
        CMalloc::Heapworks => "vec+heapworks-malloc".to_string(),
        other => format!("vec+{other}"),
    }
}

/// The peers' libraries: present ones, and missing ones with why.
pub fn lineup(peers: &[CMalloc]) -> Lineup {
    if peers.is_empty() {
        return Lineup::default();
    }
    Lineup::find(peers, &[])
}
