//! ndarray over pooled buffers (feature `ndarray`): [`PooledArray`] owns a [`PooledBuf`] and a
//! shape whose element count equals the buffer's (checked when made), lends ndarray views of
//! it, and gives the buffer back to the pool when dropped.

use ndarray::{ArrayView, ArrayViewMut, Dimension, IntoDimension};

use crate::buffer::PooledBuf;
use crate::element::Element;
use crate::error::PoolError;

/// A pooled buffer seen as an n-dimensional array in standard (row-major) layout.
#[derive(Debug)]
pub struct PooledArray<T: Element, D: Dimension> {
    buf: PooledBuf<T>,
    dim: D,
}

impl<T: Element> PooledBuf<T> {
    /// The buffer as an array of `shape`; [`PoolError::Shape`] if the shape's element count
    /// is not the buffer's length.
    pub fn into_array<D: Dimension>(
        self,
        shape: impl IntoDimension<Dim = D>,
    ) -> Result<PooledArray<T, D>, PoolError> {
        let dim = shape.into_dimension();
        let shape_len = dim.size_checked().unwrap_or(usize::MAX);
        if shape_len != self.len() {
            return Err(PoolError::Shape {
                shape_len,
                buffer_len: self.len(),
            });
        }
        Ok(PooledArray { buf: self, dim })
    }
}

impl<T: Element, D: Dimension> PooledArray<T, D> {
    /// A read-only view.
    pub fn view(&self) -> ArrayView<'_, T, D> {
        ArrayView::from_shape(self.dim.clone(), &self.buf)
            .expect("the shape's element count was checked against the buffer")
    }

    /// A mutable view.
    pub fn view_mut(&mut self) -> ArrayViewMut<'_, T, D> {
        ArrayViewMut::from_shape(self.dim.clone(), &mut self.buf)
            .expect("the shape's element count was checked against the buffer")
    }

    /// The shape.
    pub fn dim(&self) -> &D {
        &self.dim
    }

    /// The buffer back, flat.
    pub fn into_buf(self) -> PooledBuf<T> {
        self.buf
    }
}
