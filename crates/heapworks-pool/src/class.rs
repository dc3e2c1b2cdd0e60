//! Size classes: the size of a fresh buffer, and which cached buffers a request may take.
//!
//! A request of `len` bytes belongs to the class whose size is `len` rounded up to a step: 64 B
//! (the alignment granule) while `len` is at most `64 × classes per doubling`, above that
//! `2^p / classes per doubling` where `2^p < len ≤ 2^(p+1)`. A fresh buffer is made at the
//! class size, and every buffer cached in a class is at least that large, so any request of
//! the class or of a smaller one fits any of its buffers. A pool looks for a request's buffer
//! in its class and the classes of the next two doublings (see `Pool`'s matching rule).
//!
//! Invariants: the class size is at least `len` and less than `len + max(64 B, len / k)`
//! (k = classes per doubling), so a fresh buffer is below 64 B or below `1/k` of the request
//! larger than it (25 % for the default k = 4); class indices are dense from 0 and increase
//! with the size; `per_doubling` classes above a class, the size has doubled.
//!
//! Why four: with two, four and eight, the variable-shape pattern hit nearly alike and the
//! cache held least with four (TUNING.md).

/// The alignment of every buffer, and the step of the smallest classes.
pub const GRANULE: usize = 64;

/// How finely classes divide each doubling of sizes: the bound on slack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClassesPerDoubling {
    /// 2 classes per doubling: a request may get up to 50 % more than it asked for.
    Two,
    /// 4 classes per doubling: up to 25 % more (the default).
    #[default]
    Four,
    /// 8 classes per doubling: up to 12.5 % more.
    Eight,
}

impl ClassesPerDoubling {
    /// log2 of the number of classes per doubling.
    fn bits(self) -> u32 {
        match self {
            Self::Two => 1,
            Self::Four => 2,
            Self::Eight => 3,
        }
    }

    /// The largest slack a request above the granule classes can get, as a fraction of it.
    pub fn max_slack(self) -> f64 {
        1.0 / f64::from(1u32 << self.bits())
    }
}

/// The class layout of one pool.
#[derive(Debug, Clone, Copy)]
pub struct Classes {
    /// log2 of the classes per doubling.
    bits: u32,
}

/// A request's class: its index and the size of a fresh buffer for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Class {
    /// Dense index, from 0.
    pub index: usize,
    /// Bytes of a fresh buffer of the class.
    pub size: usize,
}

impl Classes {
    /// The layout with `spacing`.
    pub fn new(spacing: ClassesPerDoubling) -> Self {
        Self {
            bits: spacing.bits(),
        }
    }

    /// Up to this size, classes step by [`GRANULE`].
    fn granule_limit(self) -> usize {
        GRANULE << self.bits
    }

    /// The class of a request of `len` bytes (`len > 0`); `None` when the class size would
    /// exceed `isize::MAX`.
    ///
    /// Above the granule classes, with `2^p < len ≤ 2^(p+1)` and `k` classes per doubling,
    /// the step is `2^p / k` and `m = (len − 1) / step` (between `k` and `2k − 1`), so the
    /// class size is `(m + 1) × step` and the index `k × (p − first power) + m`: shifts only.
    #[inline]
    pub fn of(self, len: usize) -> Option<Class> {
        debug_assert!(len > 0);
        if len <= self.granule_limit() {
            let index = (len - 1) / GRANULE;
            return Some(Class {
                index,
                size: (index + 1) * GRANULE,
            });
        }
        if len > isize::MAX as usize {
            return None;
        }
        let power = usize::BITS - 1 - (len - 1).leading_zeros();
        let shift = power - self.bits;
        let m = (len - 1) >> shift;
        // At most 2^(power + 1) ≤ 2^63: no overflow, since `len ≤ isize::MAX`.
        let size = (m + 1) << shift;
        if size > isize::MAX as usize {
            return None;
        }
        let first_power = GRANULE.trailing_zeros() + self.bits;
        let index = (((power - first_power) as usize) << self.bits) + m;
        Some(Class { index, size })
    }

    /// The largest class whose every request a buffer of `capacity` bytes holds (the class
    /// it is filed under); `None` below the smallest class or past the largest.
    pub fn floor_of(self, capacity: usize) -> Option<Class> {
        let class = self.of(capacity.max(1))?;
        if class.size == capacity {
            return Some(class);
        }
        let index = class.index.checked_sub(1)?;
        Some(Class {
            index,
            size: self.size_of(index),
        })
    }

    /// Classes per doubling of sizes.
    pub fn per_doubling(self) -> usize {
        1 << self.bits
    }

    /// The size of class `index` (the inverse of [`of`](Self::of)); saturates for indices
    /// past the largest class.
    pub fn size_of(self, index: usize) -> usize {
        let per_doubling = self.per_doubling();
        if index < per_doubling {
            return (index + 1) * GRANULE;
        }
        let doubling = (index - per_doubling) / per_doubling;
        let step_in = (index - per_doubling) % per_doubling + 1;
        let power = self.granule_limit().trailing_zeros() as usize + doubling;
        if power >= usize::BITS as usize - 1 {
            return usize::MAX;
        }
        (1usize << power) + step_in * (1usize << (power - self.bits as usize))
    }

    /// How many classes there are up to `isize::MAX` bytes: those up to 2^62 and the
    /// doubling above it.
    pub fn count(self) -> usize {
        let up_to_2_62 = self.of(1 << 62).map_or(0, |class| class.index + 1);
        up_to_2_62 + (1 << self.bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [ClassesPerDoubling; 3] = [
        ClassesPerDoubling::Two,
        ClassesPerDoubling::Four,
        ClassesPerDoubling::Eight,
    ];

    #[test]
    fn a_capacity_is_filed_under_the_largest_class_it_holds_whole() {
        let classes = Classes::new(ClassesPerDoubling::Four);
        for len in [1, 64, 65, 300, 4096, 5000, 1 << 20, (1 << 20) + 1, 3 << 25] {
            let class = classes.of(len).unwrap();
            assert_eq!(classes.floor_of(class.size), Some(class), "{len}");
            let floor = classes.floor_of(class.size + 1).unwrap();
            assert!(floor.size <= class.size + 1, "{len}");
            let above = classes.size_of(floor.index + 1);
            assert!(above > class.size + 1, "{len}");
        }
        assert_eq!(classes.floor_of(63), None);
    }

    #[test]
    fn small_requests_round_to_the_granule() {
        let classes = Classes::new(ClassesPerDoubling::Eight);
        assert_eq!(classes.of(1), Some(Class { index: 0, size: 64 }));
        assert_eq!(classes.of(64), Some(Class { index: 0, size: 64 }));
        assert_eq!(
            classes.of(65),
            Some(Class {
                index: 1,
                size: 128
            })
        );
        assert_eq!(
            classes.of(512),
            Some(Class {
                index: 7,
                size: 512
            })
        );
        assert_eq!(
            classes.of(513),
            Some(Class {
                index: 8,
                size: 576
            })
        );
    }

    #[test]
    fn an_hd_image_gets_at_most_an_eighth_more() {
        let classes = Classes::new(ClassesPerDoubling::Eight);
        let hd = 1920 * 1080 * 3 * 4;
        let class = classes.of(hd).unwrap();
        assert!(class.size >= hd && class.size < hd + hd / 8);
        assert_eq!(
            class.size,
            24 << 20,
            "16 MiB and 4 steps of 2 MiB: {class:?}"
        );
    }

    #[test]
    fn slack_is_bounded_and_indices_are_dense_and_monotone() {
        for spacing in ALL {
            let classes = Classes::new(spacing);
            let mut last = classes.of(1).unwrap();
            assert_eq!(last.index, 0);
            // Every length natively; a sample under Miri, which runs this 100 times slower.
            let stride = if cfg!(miri) { 97 } else { 1 };
            for len in (2..200_000usize).step_by(stride) {
                let class = classes.of(len).unwrap();
                let bound = (len as f64 * spacing.max_slack()).max(GRANULE as f64);
                assert!(class.size >= len, "{spacing:?} {len}");
                assert!(((class.size - len) as f64) < bound, "{spacing:?} {len}");
                assert_eq!(class.index == last.index, class.size == last.size);
                if stride == 1 {
                    assert!(class.index == last.index || class.index == last.index + 1);
                } else {
                    assert!(class.index >= last.index);
                }
                assert_eq!(classes.size_of(class.index), class.size);
                last = class;
            }
        }
    }

    #[test]
    fn the_largest_requests_have_classes_or_are_refused() {
        for spacing in ALL {
            let classes = Classes::new(spacing);
            let largest_step = 1usize << (62 - spacing.bits());
            let top = classes.of((1usize << 63) - largest_step).unwrap();
            assert!(top.index < classes.count(), "{spacing:?}");
            assert_eq!(classes.of(isize::MAX as usize), None);
            assert_eq!(classes.of(usize::MAX), None);
        }
    }
}
