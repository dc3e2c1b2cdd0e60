//! The gear-dlmalloc guest (see `entries`).
#![no_std]

entries::guest!(gear_dlmalloc::GlobalDlmalloc = gear_dlmalloc::GlobalDlmalloc);
