//! The element types a pooled buffer can be typed as: plain numbers.

/// A plain numeric type: every bit pattern is a valid value (all zeros among them), there is
/// no padding, no drop and no pointer inside, and its alignment is at most 64 B.
///
/// # Safety
/// An implementation promises all of the above: the pool hands out reused memory holding
/// whatever bytes the previous user left, and zero-fills by writing bytes.
pub unsafe trait Element: Copy + Send + Sync + 'static {}

macro_rules! elements {
    ($($t:ty),*) => {
        $(
            // SAFETY: a primitive number: no padding, every bit pattern valid, alignment ≤ 16.
            unsafe impl Element for $t {}
        )*
    };
}

elements!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);
