//! One registry mechanism for every closed set of named things the benchmarks choose from
//! (allocators, workloads, C mallocs, their workloads): the [`registry!`](macro@crate::registry)
//! macro declares the enum and its one table of names and descriptions together, and
//! [`Registry`] gives every set the same look-up, listing and `Display`.
//!
//! Invariants: each variant's name and description are written once, beside the variant; the
//! listing order ([`Registry::ALL`]) is the declaration order; `from_name` is exact (no case
//! folding, no prefixes). A set may end with variants carrying data (a contender registered at
//! run time, one of a sub-registry), each named and described by an expression over it and
//! left out of `ALL`; one declared `found by LOOKUP` is found by name too (`LOOKUP(name)`
//! gives its data), after the entries of `ALL`.

/// A closed set of named entries.
pub trait Registry: Copy + PartialEq + 'static {
    /// Every entry known when the program was built, in listing order.
    const ALL: &'static [Self];

    /// The name on the command line, in tables and in result files.
    fn name(self) -> &'static str;

    /// One line on what the entry is or measures.
    fn description(self) -> &'static str;

    /// The entry called `name`: one of [`ALL`](Self::ALL), or a data variant found by name.
    fn find(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|entry| entry.name() == name)
    }

    /// Every name of [`ALL`](Self::ALL), in order.
    fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|entry| entry.name()).collect()
    }

    /// `name  description` lines, names padded to `width`, for `heapworks list`.
    fn listing(width: usize) -> String {
        Self::ALL
            .iter()
            .map(|entry| format!("  {:<width$} {}\n", entry.name(), entry.description()))
            .collect()
    }
}

/// Declares an enum and its registry: each variant with its name and description, written
/// once. Generates the enum, inherent `ALL`, `name`, `description` and `from_name` (so
/// callers need no trait in scope), the [`Registry`] impl and `Display` (the name). Variants
/// with data follow a `;` each (see the module docs).
///
/// ```
/// heapworks_bench::registry! {
///     /// Fruit.
///     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
///     pub enum Fruit {
///         /// Red.
///         Apple = ("apple", "a red fruit"),
///         /// Yellow.
///         Banana = ("banana", "a yellow fruit"),
///     }
/// }
/// assert_eq!(Fruit::from_name("banana"), Some(Fruit::Banana));
/// assert_eq!(Fruit::Apple.description(), "a red fruit");
/// assert_eq!(Fruit::ALL.len(), 2);
/// assert_eq!(Fruit::Banana.to_string(), "banana");
/// ```
#[macro_export]
macro_rules! registry {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$variant_meta:meta])*
                $variant:ident = ($text:expr, $description:expr)
            ),* $(,)?
            $(
                ;
                $(#[$other_meta:meta])*
                $other:ident($binding:ident: $other_type:ty) => ($other_text:expr, $other_description:expr)
                $(, found by $lookup:path)?
            )*
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $($(#[$variant_meta])* $variant,)*
            $($(#[$other_meta])* $other($other_type),)*
        }

        impl $name {
            /// Every entry known when the program was built, in listing order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The name on the command line, in tables and in result files.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                    $($name::$other($binding) => $other_text,)*
                }
            }

            /// One line on what the entry is or measures.
            pub fn description(self) -> &'static str {
                match self {
                    $($name::$variant => $description,)*
                    $($name::$other($binding) => $other_description,)*
                }
            }

            /// The entry of [`ALL`](Self::ALL) called `name`, else the data variant declared
            /// `found by` that knows the name.
            pub fn from_name(name: &str) -> Option<Self> {
                let found = Self::ALL.iter().copied().find(|entry| entry.name() == name);
                $($(let found = found.or_else(|| $lookup(name).map($name::$other));)?)*
                found
            }
        }

        impl $crate::registry::Registry for $name {
            const ALL: &'static [Self] = $name::ALL;

            fn name(self) -> &'static str {
                $name::name(self)
            }

            fn description(self) -> &'static str {
                $name::description(self)
            }

            fn find(name: &str) -> Option<Self> {
                $name::from_name(name)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str($name::name(*self))
            }
        }
    };
}
