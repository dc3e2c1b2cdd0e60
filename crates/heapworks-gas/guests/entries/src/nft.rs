//! A non-fungible-token program over Rust collections, the workload of seed 000's
//! "NFT init → mint → burn" (Gear's NFT contract: a collection, tokens with owners and
//! metadata, minting constraints, and transactions remembered by id so a repeated transaction
//! gets the recorded answer instead of running twice).
//!
//! A message is read into a fresh `Vec<u8>`, decoded into an owned [`Action`] (actor ids as
//! owned 32-byte `Vec<u8>`s, metadata as `String`s), applied to the state's `BTreeMap`s, and
//! answered with an event encoded into a fresh `Vec<u8>`.
//!
//! Message layout: `[tag][source: 32 B]` then, by tag, 0 init: name, description (each a
//! `u32` length and UTF-8 bytes), max mint count (`u32`, 0 for none), a `u8` count of
//! authorized minters and their 32-byte ids; 1 mint: transaction id (`u64`), the token's name,
//! description, media and reference; 2 burn: transaction id, token id (`u64`). Little-endian.
//!
//! Invariant: the state lives in a `static` across messages and only `nft_handle` touches it;
//! a token id is in `owner_by_id` exactly when it is in `metadata_by_id` and in its owner's
//! `tokens_for_owner` list.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::program;

const ID_BYTES: usize = 32;

/// A token's metadata, as the contract keeps it.
#[expect(
    dead_code,
    reason = "state as the contract keeps it; read by its state query, which no scenario sends"
)]
struct Metadata {
    name: String,
    description: String,
    media: String,
    reference: String,
}

/// An init message's fields.
struct Init {
    name: String,
    description: String,
    max_mint_count: Option<u32>,
    minters: Vec<Vec<u8>>,
}

/// A decoded message.
enum Action {
    Init(Init),
    Mint {
        transaction: u64,
        metadata: Metadata,
    },
    Burn {
        transaction: u64,
        token: u64,
    },
}

/// What a transaction did, recorded and replied.
#[derive(Clone)]
enum Event {
    /// A token moved (`from` all zeros: minted; `to` all zeros: burnt).
    Transfer {
        from: Vec<u8>,
        to: Vec<u8>,
        token: u64,
    },
    /// The transaction was refused (not a minter, limit reached, not the owner, no token).
    Refused,
}

/// The program's state.
struct Collection {
    name: String,
    description: String,
    owner: Vec<u8>,
    max_mint_count: Option<u32>,
    minters: Vec<Vec<u8>>,
    next_token: u64,
    owner_by_id: BTreeMap<u64, Vec<u8>>,
    tokens_for_owner: BTreeMap<Vec<u8>, Vec<u64>>,
    metadata_by_id: BTreeMap<u64, Metadata>,
    /// Keyed by the source's id followed by the transaction id.
    transactions: BTreeMap<Vec<u8>, Event>,
}

static mut COLLECTION: Option<Collection> = None;

/// Reads a message's fields front to back.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn bytes(&mut self, len: usize) -> Option<&[u8]> {
        let (head, rest) = (self.0.get(..len)?, self.0.get(len..)?);
        self.0 = rest;
        Some(head)
    }

    fn id(&mut self) -> Option<Vec<u8>> {
        self.bytes(ID_BYTES).map(<[u8]>::to_vec)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.bytes(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }

    fn string(&mut self) -> Option<String> {
        let len = self.u32()? as usize;
        String::from_utf8(self.bytes(len)?.to_vec()).ok()
    }
}

/// Decodes a message: its source and action.
fn decode(payload: &[u8]) -> Option<(Vec<u8>, Action)> {
    let mut r = Reader(payload);
    let tag = r.u8()?;
    let source = r.id()?;
    let action = match tag {
        0 => Action::Init(Init {
            name: r.string()?,
            description: r.string()?,
            max_mint_count: Some(r.u32()?).filter(|&n| n > 0),
            minters: (0..r.u8()?).map(|_| r.id()).collect::<Option<_>>()?,
        }),
        1 => Action::Mint {
            transaction: r.u64()?,
            metadata: Metadata {
                name: r.string()?,
                description: r.string()?,
                media: r.string()?,
                reference: r.string()?,
            },
        },
        2 => Action::Burn {
            transaction: r.u64()?,
            token: r.u64()?,
        },
        _ => return None,
    };
    Some((source, action))
}

/// The zero actor id: the other side of a mint or a burn.
fn nobody() -> Vec<u8> {
    vec![0; ID_BYTES]
}

impl Collection {
    /// The state an init message sets up.
    fn init(owner: Vec<u8>, action: Init) -> Collection {
        Collection {
            name: action.name,
            description: action.description,
            owner,
            max_mint_count: action.max_mint_count,
            minters: action.minters,
            next_token: 0,
            owner_by_id: BTreeMap::new(),
            tokens_for_owner: BTreeMap::new(),
            metadata_by_id: BTreeMap::new(),
            transactions: BTreeMap::new(),
        }
    }

    /// Runs `action` once per (source, transaction id); a repeat gets the recorded event.
    fn transaction(
        &mut self,
        source: &[u8],
        transaction: u64,
        action: impl FnOnce(&mut Collection) -> Event,
    ) -> Event {
        let mut key = source.to_vec();
        key.extend_from_slice(&transaction.to_le_bytes());
        if let Some(event) = self.transactions.get(&key) {
            return event.clone();
        }
        let event = action(self);
        self.transactions.insert(key, event.clone());
        event
    }

    fn may_mint(&self, source: &[u8]) -> bool {
        let below_limit = self
            .max_mint_count
            .is_none_or(|max| (self.metadata_by_id.len() as u64) < u64::from(max));
        below_limit && self.minters.iter().any(|m| m == source)
    }

    fn mint(&mut self, source: &[u8], metadata: Metadata) -> Event {
        if !self.may_mint(source) {
            return Event::Refused;
        }
        let token = self.next_token;
        self.next_token += 1;
        self.owner_by_id.insert(token, source.to_vec());
        self.tokens_for_owner
            .entry(source.to_vec())
            .or_default()
            .push(token);
        self.metadata_by_id.insert(token, metadata);
        Event::Transfer {
            from: nobody(),
            to: source.to_vec(),
            token,
        }
    }

    fn burn(&mut self, source: &[u8], token: u64) -> Event {
        if self.owner_by_id.get(&token).is_none_or(|o| o != source) {
            return Event::Refused;
        }
        let owner = self.owner_by_id.remove(&token).unwrap_or_default();
        if let Some(tokens) = self.tokens_for_owner.get_mut(&owner) {
            tokens.retain(|&t| t != token);
            if tokens.is_empty() {
                self.tokens_for_owner.remove(&owner);
            }
        }
        self.metadata_by_id.remove(&token);
        Event::Transfer {
            from: owner,
            to: nobody(),
            token,
        }
    }
}

/// The init's reply: `[1][owner][name][description]` (each string length-prefixed).
fn encode_collection(c: &Collection) -> Vec<u8> {
    let mut reply = vec![1];
    reply.extend_from_slice(&c.owner);
    for text in [&c.name, &c.description] {
        reply.extend_from_slice(&(text.len() as u32).to_le_bytes());
        reply.extend_from_slice(text.as_bytes());
    }
    reply
}

/// Encodes an event as the reply: `[0][from][to][token]`, or `[0xff]` if refused.
fn encode(event: &Event) -> Vec<u8> {
    let mut reply = Vec::new();
    match event {
        Event::Transfer { from, to, token } => {
            reply.push(0);
            reply.extend_from_slice(from);
            reply.extend_from_slice(to);
            reply.extend_from_slice(&token.to_le_bytes());
        }
        Event::Refused => reply.push(0xff),
    }
    reply
}

/// Handles one message of `len` bytes; 1 if it decoded (and an init came first), 0 if not.
#[no_mangle]
pub extern "C" fn nft_handle(len: usize) -> i32 {
    let payload = program::load(len);
    let Some((source, action)) = decode(&payload) else {
        return 0;
    };
    drop(payload);
    // SAFETY: one message at a time (wasm32 without threads), and this is the only reference.
    let slot: &mut Option<Collection> = unsafe { &mut *core::ptr::addr_of_mut!(COLLECTION) };
    let event = match (action, slot.as_mut()) {
        (Action::Init(init), _) => {
            let collection = slot.insert(Collection::init(source, init));
            program::reply(&encode_collection(collection));
            return 1;
        }
        (Action::Mint { .. } | Action::Burn { .. }, None) => return 0,
        (
            Action::Mint {
                transaction,
                metadata,
            },
            Some(collection),
        ) => collection.transaction(&source, transaction, |c| c.mint(&source, metadata)),
        (Action::Burn { transaction, token }, Some(collection)) => {
            collection.transaction(&source, transaction, |c| c.burn(&source, token))
        }
    };
    program::reply(&encode(&event));
    1
}
