//! Operations on a C malloc and their decoding from arbitrary bytes (for fuzzing).
//!
//! Invariants: every byte string decodes, 4 bytes an operation (a shorter tail is ignored):
//!
//! ```text
//! byte 0: low nibble = kind (below), high nibble = aux1
//! byte 1: low nibble = size band (see `size_of_band`), high nibble = aux2
//! bytes 2-3: value (little endian), the size within the band or a slot
//! ```
//!
//! | kind | operation |
//! |---|---|
//! | 0-2 | `malloc` (and 15 unless `aux2` is 15) |
//! | 3 | `calloc` of `1 + aux1 % 8` elements |
//! | 4 | `realloc(NULL, n)` |
//! | 5 | an aligned entry point (`aux2 % 5`) at alignment `2^(aux1 + aux2 / 8)`: 1 B to 64 KiB |
//! | 6, 7 | `free` of the block in slot `value` |
//! | 8 | the sized free that fits the block's origin (`free_sized`, `free_aligned_sized`) |
//! | 9 | `realloc` of slot `aux1 + 16 * aux2` to a size of the band |
//! | 10 | `realloc` of that slot by `(1 + band) / 8` of its size plus byte 2 (growth, shrink) |
//! | 11 | `reallocarray` of slot `aux2` to `1 + aux1 % 4` elements of a size of the band |
//! | 12 | switch to thread `aux1 % 3` |
//! | 13 | retire worker `1 + aux1 % 2` (its thread exits holding its cache); if `aux1 & 2`, its exit destructor first frees `aux1 / 4` blocks from slot `value` and runs probes |
//! | 14 | an edge case (`aux1 % 12`, see [`EdgeCase`]) on slot `value` |
//! | 15 with `aux2` = 15 | `aux1` even: `malloc` of `512 * (1 + aux1 / 2)` blocks of a small size (band `% 5`); odd: `free` of as many from slot `value` |
//!
//! Sizes reach every path of a malloc like heapworks-malloc's: tiny (up to 128 B), the classes
//! slots take once promoted (129 to 384 B), the rest of the small classes (to 1016 B), medium
//! (to 256 KiB), large (to 40 MiB, past a 32 MiB per-thread cache) and the boundaries between
//! them. The bulk operations move enough blocks of one class (up to 4096) to overflow a thread
//! cache and its transfer batches, so slabs fill, empty and are given back.

use super::THREADS;

/// How a new block is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Malloc,
    /// `calloc(count, size / count)`.
    Calloc {
        count: usize,
    },
    ReallocNull,
    PosixMemalign {
        align_log2: u8,
    },
    AlignedAlloc {
        align_log2: u8,
    },
    Memalign {
        align_log2: u8,
    },
    Valloc,
    Pvalloc,
}

/// The size a realloc asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resize {
    To(usize),
    /// `size * eighths / 8 + extra`, from the block's requested size.
    Scale {
        eighths: usize,
        extra: usize,
    },
}

/// Calls whose outcome the C contract fixes, mostly failures that must leave everything as it
/// was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeCase {
    /// `free(NULL)`: nothing happens, errno included.
    FreeNull,
    /// `malloc` of more than `PTRDIFF_MAX`: NULL, `ENOMEM`.
    MallocTooLarge,
    /// `calloc` whose product overflows: NULL, `ENOMEM`.
    CallocOverflow,
    /// `realloc` of a live block (or NULL) to more than `PTRDIFF_MAX`: NULL, `ENOMEM`, the
    /// block untouched.
    ReallocTooLarge,
    /// `reallocarray` whose product overflows: NULL, `ENOMEM`, the block untouched.
    ReallocArrayOverflow,
    /// `posix_memalign` with an alignment that is not a power-of-two multiple of the pointer
    /// size: `EINVAL`, `*memptr` untouched.
    PosixMemalignBadAlign,
    /// `aligned_alloc(64, n)` with `n` near `SIZE_MAX`: NULL, `ENOMEM`.
    AlignedAllocTooLarge,
    /// `malloc_usable_size(NULL)` is 0.
    UsableSizeNull,
    /// `realloc(p, 0)`: frees `p`; NULL or a block of size 0.
    ReallocToZero,
    /// `posix_memalign(&p, 64, n)` with `n` near `SIZE_MAX`: `ENOMEM`, `*memptr` untouched.
    PosixMemalignTooLarge,
    /// `memalign` with an alignment above `SIZE_MAX / 2 + 1`: NULL, `EINVAL`.
    MemalignBadAlign,
    /// `pvalloc` of a size near `SIZE_MAX`: NULL, `ENOMEM`.
    PvallocTooLarge,
}

pub(crate) const EDGE_CASES: [EdgeCase; 12] = [
    EdgeCase::FreeNull,
    EdgeCase::MallocTooLarge,
    EdgeCase::CallocOverflow,
    EdgeCase::ReallocTooLarge,
    EdgeCase::ReallocArrayOverflow,
    EdgeCase::PosixMemalignBadAlign,
    EdgeCase::AlignedAllocTooLarge,
    EdgeCase::UsableSizeNull,
    EdgeCase::ReallocToZero,
    EdgeCase::PosixMemalignTooLarge,
    EdgeCase::MemalignBadAlign,
    EdgeCase::PvallocTooLarge,
];

/// One operation. Slots name live blocks by position, modulo their number (any value is
/// valid; with no live block an operation on a slot does nothing, or uses NULL where the
/// contract defines it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MallocOp {
    Allocate {
        size: usize,
        entry: Entry,
    },
    Free {
        slot: usize,
        sized: bool,
    },
    Realloc {
        slot: usize,
        resize: Resize,
    },
    ReallocArray {
        slot: usize,
        count: usize,
        size: usize,
    },
    Switch {
        thread: usize,
    },
    /// Ends worker `thread`. With `exit_work`, it frees `exit_frees` blocks from `slot` on and
    /// runs probes in a destructor at its exit (see `exit_work` in the parent module).
    Retire {
        thread: usize,
        exit_work: bool,
        exit_frees: usize,
        slot: usize,
    },
    Edge {
        case: EdgeCase,
        slot: usize,
    },
    /// `count` `malloc`s of `size`.
    AllocateMany {
        size: usize,
        count: usize,
    },
    /// Frees of up to `count` blocks, each from slot `slot`.
    FreeMany {
        slot: usize,
        count: usize,
    },
}

/// Sizes of the boundaries between a malloc's paths (heapworks-malloc's, and the ones any
/// malloc has at powers of two and page multiples).
const BOUNDARIES: [usize; 28] = [
    0,
    1,
    15,
    16,
    17,
    127,
    128,
    129,
    143,
    144,
    383,
    384,
    385,
    1015,
    1016,
    1017,
    1024,
    4095,
    4096,
    65536,
    131_072,
    131_073,
    262_143,
    262_144,
    262_145,
    1 << 20,
    32 << 20,
    (32 << 20) + 1,
];

/// The size band `band` (a nibble) and `value` name: bands weighted towards small sizes, as
/// programs ask for them, and two nibbles of boundary sizes.
fn size_of_band(band: u8, value: u16) -> usize {
    let (low, high) = match band % 12 {
        0 | 1 => (0, 128),
        2 | 3 => (129, 384),
        4 => (385, 1016),
        5 => (1017, 4096),
        6 => (4097, 32 << 10),
        7 => ((32 << 10) + 1, 256 << 10),
        8 => ((256 << 10) + 1, 2 << 20),
        9 => ((2 << 20) + 1, 40 << 20),
        _ => return BOUNDARIES[usize::from(value) % BOUNDARIES.len()],
    };
    low + (high - low) * usize::from(value) / usize::from(u16::MAX)
}

impl MallocOp {
    /// Decodes operations from arbitrary bytes (see the module's table).
    pub fn decode_all(bytes: &[u8]) -> Vec<MallocOp> {
        bytes
            .chunks_exact(4)
            .map(|b| Self::decode([b[0], b[1], b[2], b[3]]))
            .collect()
    }

    fn decode(bytes: [u8; 4]) -> MallocOp {
        let kind = bytes[0] & 15;
        let aux1 = bytes[0] >> 4;
        let band = bytes[1] & 15;
        let aux2 = bytes[1] >> 4;
        let value = u16::from_le_bytes([bytes[2], bytes[3]]);
        let size = size_of_band(band, value);
        let slot = usize::from(value);
        let aux_slot = usize::from(aux1) + 16 * usize::from(aux2);
        let allocate = |entry| MallocOp::Allocate { size, entry };
        match kind {
            3 => allocate(Entry::Calloc {
                count: 1 + usize::from(aux1 % 8),
            }),
            4 => allocate(Entry::ReallocNull),
            5 => {
                let align_log2 = aux1 + aux2 / 8;
                allocate(match aux2 % 5 {
                    0 => Entry::PosixMemalign { align_log2 },
                    1 => Entry::AlignedAlloc { align_log2 },
                    2 => Entry::Memalign { align_log2 },
                    3 => Entry::Valloc,
                    _ => Entry::Pvalloc,
                })
            }
            6 | 7 => MallocOp::Free { slot, sized: false },
            8 => MallocOp::Free { slot, sized: true },
            9 => MallocOp::Realloc {
                slot: aux_slot,
                resize: Resize::To(size),
            },
            10 => MallocOp::Realloc {
                slot: aux_slot,
                resize: Resize::Scale {
                    eighths: 1 + usize::from(band),
                    extra: usize::from(bytes[2]),
                },
            },
            11 => MallocOp::ReallocArray {
                slot: usize::from(aux2),
                count: 1 + usize::from(aux1 % 4),
                size,
            },
            12 => MallocOp::Switch {
                thread: usize::from(aux1) % THREADS,
            },
            13 => MallocOp::Retire {
                thread: 1 + usize::from(aux1) % (THREADS - 1),
                exit_work: aux1 & 2 != 0,
                exit_frees: usize::from(aux1 / 4),
                slot,
            },
            14 => MallocOp::Edge {
                case: EDGE_CASES[usize::from(aux1) % EDGE_CASES.len()],
                slot,
            },
            // Rare (a bulk operation costs thousands of calls), and common enough in 1024.
            15 if aux2 == 15 => {
                let count = 512 * (1 + usize::from(aux1 / 2));
                if aux1.is_multiple_of(2) {
                    MallocOp::AllocateMany {
                        size: size_of_band(band % 5, value),
                        count,
                    }
                } else {
                    MallocOp::FreeMany { slot, count }
                }
            }
            _ => allocate(Entry::Malloc),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_cover_their_ranges_and_the_boundaries() {
        assert_eq!(size_of_band(0, 0), 0);
        assert_eq!(size_of_band(0, u16::MAX), 128);
        assert_eq!(size_of_band(2, 0), 129);
        assert_eq!(size_of_band(3, u16::MAX), 384);
        assert_eq!(size_of_band(9, u16::MAX), 40 << 20);
        for (index, &boundary) in BOUNDARIES.iter().enumerate() {
            assert_eq!(size_of_band(10, index as u16), boundary);
        }
    }

    #[test]
    fn every_kind_decodes() {
        let ops: Vec<_> = (0..16u8)
            .map(|kind| MallocOp::decode([kind | 0xf0, 0xf9, 0xff, 0xff]))
            .collect();
        assert_eq!(
            ops[5],
            MallocOp::Allocate {
                size: 40 << 20,
                entry: Entry::PosixMemalign { align_log2: 16 }
            }
        );
        assert_eq!(
            ops[10],
            MallocOp::Realloc {
                slot: 255,
                resize: Resize::Scale {
                    eighths: 10,
                    extra: 255
                }
            }
        );
        assert_eq!(
            ops[13],
            MallocOp::Retire {
                thread: 2,
                exit_work: true,
                exit_frees: 3,
                slot: 0xffff
            }
        );
        assert_eq!(
            ops[15],
            MallocOp::FreeMany {
                slot: 0xffff,
                count: 4096,
            }
        );
        assert_eq!(
            MallocOp::decode([0x0f, 0xf4, 0xff, 0xff]),
            MallocOp::AllocateMany {
                size: 1016,
                count: 512
            }
        );
        assert_eq!(MallocOp::decode_all(&[0; 11]).len(), 2);
    }
}
