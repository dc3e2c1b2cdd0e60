//! The dlmalloc guest (see `entries`).
#![no_std]

entries::guest!(dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc);
