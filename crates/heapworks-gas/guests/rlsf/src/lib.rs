//! The rlsf guest (see `entries`).
#![no_std]

entries::guest!(rlsf::SmallGlobalTlsf = rlsf::SmallGlobalTlsf::new());
