//! The host: one instrumented guest in wasmi, its gas read around every call, its pages priced
//! per message as Gear prices them.
//!
//! Invariants:
//! - A call's gas is the `gear_gas` global's drop across it (the instructions, as metered by
//!   Gear's instrumenter) plus what the host charged while it ran: syscalls (`alloc`,
//!   `free_range`) and pages.
//! - Pages are Gear's 16 KiB pages, charged at their first access in a message: a first read
//!   (plus loading its data if it holds some), a first write (or a write after a read), and
//!   the upload of every page the message dirtied, charged to the call that first dirtied it.
//!   A page holds data once a message wrote it, or if it is part of the initial memory.
//! - Memory grows only through `alloc`, within `max_pages` wasm pages; beyond, `alloc`
//!   refuses with `u32::MAX`.

use std::collections::HashSet;

use wasmi::{Caller, Engine, Global, Instance, Linker, Memory, Module, Store, TypedFunc, Val};

use crate::instrument::{self, HOST_MODULE};
use crate::schedule::pages as price;

/// What one call cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    /// Gas of the instructions executed.
    pub instructions: u64,
    /// Gas of syscalls and pages.
    pub host: u64,
    /// Gear pages first accessed in the message by this call.
    pub pages: u64,
}

impl Cost {
    /// Everything the call cost.
    pub fn total(&self) -> u64 {
        self.instructions + self.host
    }
}

/// The meter's reading when a marked allocator call started: kind, gas left, host gas, pages.
type Mark = (usize, i64, u64, u64);

/// The host's side of the guest: page ledger and syscall charges.
struct Host {
    /// The current message's payload, for `gas_read`.
    payload: Vec<u8>,
    /// The last reply the program handed over (`gas_reply`), for tests of the programs.
    reply: Vec<u8>,
    /// The marked allocator call in progress.
    mark: Option<Mark>,
    /// The marked allocator calls since the last [`Machine::take_marked`]: kind and cost.
    marked: Vec<(usize, Cost)>,
    memory: Option<Memory>,
    max_pages: u32,
    read: HashSet<u64>,
    written: HashSet<u64>,
    holding_data: HashSet<u64>,
    gas: u64,
    pages: u64,
}

impl Host {
    /// Charges the access of `[start, start + width)`.
    fn touch(&mut self, start: u64, width: u64, write: bool) {
        for page in start / price::GEAR_PAGE..=(start + width.max(1) - 1) / price::GEAR_PAGE {
            let load = if self.holding_data.contains(&page) {
                price::LOAD_DATA
            } else {
                0
            };
            let seen = self.read.contains(&page) || self.written.contains(&page);
            if !seen {
                self.pages += 1;
            }
            if write {
                if self.written.insert(page) {
                    self.gas += price::UPLOAD_DIRTY
                        + if self.read.contains(&page) {
                            price::WRITE_AFTER_READ
                        } else {
                            price::FIRST_WRITE + load
                        };
                }
            } else if !seen {
                self.read.insert(page);
                self.gas += price::FIRST_READ + load;
            }
        }
    }
}

/// A guest, instantiated and ready for calls.
pub struct Machine {
    store: Store<Host>,
    instance: Instance,
    gas: Global,
    memory: Memory,
    alloc: TypedFunc<(i32, i32), i32>,
    alloc_zeroed: TypedFunc<(i32, i32), i32>,
    realloc: TypedFunc<(i32, i32, i32, i32), i32>,
    dealloc: TypedFunc<(i32, i32, i32), ()>,
}

/// The gas a guest starts with: far more than any scenario spends.
const GAS_LIMIT: i64 = i64::MAX / 2;

impl Machine {
    /// Instruments `wasm` and instantiates it, with memory growth capped at `max_pages`.
    pub fn new(wasm: &[u8], max_pages: u32) -> Result<Machine, String> {
        let instrumented = instrument::instrument(wasm)?;
        let engine = Engine::default();
        let module = Module::new(&engine, &instrumented[..]).map_err(|e| format!("wasmi: {e}"))?;
        let host = Host {
            payload: Vec::new(),
            reply: Vec::new(),
            mark: None,
            marked: Vec::new(),
            memory: None,
            max_pages,
            read: HashSet::new(),
            written: HashSet::new(),
            holding_data: HashSet::new(),
            gas: 0,
            pages: 0,
        };
        let mut store = Store::new(&engine, host);
        let mut linker = Linker::<Host>::new(&engine);
        linker
            .func_wrap(HOST_MODULE, instrument::ALLOC, grow)
            .and_then(|l| l.func_wrap(HOST_MODULE, "free_range", free_range))
            .and_then(|l| l.func_wrap(HOST_MODULE, instrument::TOUCH, touch))
            .and_then(|l| l.func_wrap(HOST_MODULE, "gr_system_break", system_break))
            .and_then(|l| l.func_wrap(HOST_MODULE, "gas_mark", mark))
            .and_then(|l| l.func_wrap(HOST_MODULE, "gas_read", read))
            .and_then(|l| l.func_wrap(HOST_MODULE, "gas_reply", reply))
            .map_err(|e| format!("linking the host: {e}"))?;
        let instance = linker
            .instantiate_and_start(&mut store, &module)
            .map_err(|e| format!("instantiating the guest: {e}"))?;
        let memory = instance
            .get_memory(&store, "memory")
            .ok_or("the guest exports no memory")?;
        let gas = instance
            .get_global(&store, gear_wasm_instrument::GLOBAL_NAME_GAS)
            .ok_or("the instrumented guest has no gas global")?;
        gas.set(&mut store, Val::I64(GAS_LIMIT))
            .map_err(|e| format!("setting the gas: {e}"))?;
        let initial_pages = memory.size(&store) * 4;
        store.data_mut().memory = Some(memory);
        store.data_mut().holding_data = (0..initial_pages).collect();
        Ok(Machine {
            alloc: entry(&instance, &store, "gas_alloc")?,
            alloc_zeroed: entry(&instance, &store, "gas_alloc_zeroed")?,
            realloc: entry(&instance, &store, "gas_realloc")?,
            dealloc: entry(&instance, &store, "gas_dealloc")?,
            store,
            instance,
            gas,
            memory,
        })
    }

    /// Starts a new message: no page is accessed yet; pages dirtied before now hold data.
    pub fn begin_message(&mut self) {
        let host = self.store.data_mut();
        let written = std::mem::take(&mut host.written);
        host.holding_data.extend(written);
        host.read.clear();
    }

    fn gas_left(&self) -> i64 {
        match self.gas.get(&self.store) {
            Val::I64(gas) => gas,
            _ => 0,
        }
    }

    /// Runs `call` and meters it.
    fn metered<R>(
        &mut self,
        call: impl FnOnce(&mut Store<Host>) -> Result<R, wasmi::Error>,
    ) -> Result<(R, Cost), String> {
        let before = self.gas_left();
        let (host_before, pages_before) = (self.store.data().gas, self.store.data().pages);
        let result = call(&mut self.store).map_err(|e| format!("the guest trapped: {e}"))?;
        let cost = Cost {
            instructions: (before - self.gas_left()) as u64,
            host: self.store.data().gas - host_before,
            pages: self.store.data().pages - pages_before,
        };
        Ok((result, cost))
    }

    /// `GlobalAlloc::alloc`, or `alloc_zeroed` if `zeroed`; the block's address (0 for
    /// null) and the cost.
    pub fn alloc(&mut self, zeroed: bool, size: u32, align: u32) -> Result<(u32, Cost), String> {
        let f = if zeroed {
            self.alloc_zeroed
        } else {
            self.alloc
        };
        let (ptr, cost) = self.metered(|s| f.call(s, (size as i32, align as i32)))?;
        Ok((ptr as u32, cost))
    }

    /// `GlobalAlloc::realloc`.
    pub fn realloc(
        &mut self,
        ptr: u32,
        size: u32,
        align: u32,
        new_size: u32,
    ) -> Result<(u32, Cost), String> {
        let f = self.realloc;
        let args = (ptr as i32, size as i32, align as i32, new_size as i32);
        let (ptr, cost) = self.metered(|s| f.call(s, args))?;
        Ok((ptr as u32, cost))
    }

    /// `GlobalAlloc::dealloc`.
    pub fn dealloc(&mut self, ptr: u32, size: u32, align: u32) -> Result<Cost, String> {
        let f = self.dealloc;
        let args = (ptr as i32, size as i32, align as i32);
        Ok(self.metered(|s| f.call(s, args))?.1)
    }

    /// Runs a program's entry `entry(len) -> i32` (`ft_handle`, `nft_handle`) on `payload`
    /// as one message: its whole cost, and the marked allocator calls it made (kind: 0
    /// malloc, 1 calloc, 2 realloc, 3 free). The caller starts messages
    /// ([`Machine::begin_message`]): pages are charged at their first access since then.
    pub fn handle(
        &mut self,
        entry_name: &str,
        payload: &[u8],
    ) -> Result<(Cost, Vec<(usize, Cost)>), String> {
        self.store.data_mut().payload = payload.to_vec();
        let handle = entry::<i32, i32>(&self.instance, &self.store, entry_name)?;
        let (decoded, cost) = self.metered(|s| handle.call(s, payload.len() as i32))?;
        if decoded != 1 {
            return Err(format!("the program refused the message {payload:?}"));
        }
        Ok((cost, std::mem::take(&mut self.store.data_mut().marked)))
    }

    /// The last reply a program handed over (empty before the first).
    pub fn last_reply(&self) -> &[u8] {
        &self.store.data().reply
    }

    /// Calls the guest's export `name() -> i32`, unmetered.
    pub fn call_i32(&mut self, name: &str) -> Result<i32, String> {
        entry::<(), i32>(&self.instance, &self.store, name)?
            .call(&mut self.store, ())
            .map_err(|e| format!("the guest trapped in `{name}`: {e}"))
    }

    /// The memory's size in wasm pages.
    pub fn memory_pages(&self) -> u64 {
        self.memory.size(&self.store)
    }

    /// Grows the memory by `pages` from the host, as another user of the memory would: the
    /// guest's next growth no longer follows its last region.
    pub fn grow_from_host(&mut self, pages: u64) -> Result<(), String> {
        self.memory
            .grow(&mut self.store, pages)
            .map(drop)
            .map_err(|e| format!("growing the memory: {e}"))
    }

    /// Fills `[ptr, ptr + len)` with `byte` from the host (no gas, no page charge: the program
    /// that owns a block writes it, not the allocator).
    pub fn fill(&mut self, ptr: u32, len: u32, byte: u8) -> Result<(), String> {
        let data = self.memory.data_mut(&mut self.store);
        let block = data
            .get_mut(ptr as usize..ptr as usize + len as usize)
            .ok_or_else(|| format!("block {ptr:#x}+{len} outside the guest's memory"))?;
        block.fill(byte);
        Ok(())
    }

    /// Whether `[ptr, ptr + len)` holds `byte` everywhere.
    pub fn holds(&self, ptr: u32, len: u32, byte: u8) -> bool {
        let data = self.memory.data(&self.store);
        data.get(ptr as usize..ptr as usize + len as usize)
            .is_some_and(|block| block.iter().all(|&b| b == byte))
    }
}

/// The guest's export `name`, typed.
fn entry<P: wasmi::WasmParams, R: wasmi::WasmResults>(
    instance: &Instance,
    store: &Store<Host>,
    name: &str,
) -> Result<TypedFunc<P, R>, String> {
    instance
        .get_typed_func(store, name)
        .map_err(|_| format!("the guest lacks the entry `{name}` (or has another type)"))
}

/// `env.alloc(pages) -> u32`: grows the memory, charged as Gear's syscall.
fn grow(mut caller: Caller<'_, Host>, pages: u32) -> u32 {
    let host = caller.data_mut();
    host.gas += price::ALLOC_SYSCALL + price::MEM_GROW + price::MEM_GROW_PER_PAGE * pages as u64;
    let (Some(memory), max_pages) = (host.memory, host.max_pages) else {
        return u32::MAX;
    };
    if memory.size(&caller) + pages as u64 > max_pages as u64 {
        return u32::MAX;
    }
    memory
        .grow(&mut caller, pages as u64)
        .map_or(u32::MAX, |old| old as u32)
}

/// `env.free_range(first, last) -> i32`: charged as Gear's syscall; the pages stay mapped.
fn free_range(mut caller: Caller<'_, Host>, first: u32, last: u32) -> i32 {
    let pages = last.saturating_sub(first) as u64 + 1;
    caller.data_mut().gas += price::FREE_RANGE_SYSCALL + price::FREE_RANGE_PER_PAGE * pages;
    0
}

/// `env.gas_touch(address, offset, width | WRITE)`: the page probe.
fn touch(mut caller: Caller<'_, Host>, address: i32, offset: i32, access: i32) {
    let start = address as u32 as u64 + offset as u32 as u64;
    let width = (access & (instrument::WRITE - 1)) as u64;
    caller
        .data_mut()
        .touch(start, width, access & instrument::WRITE != 0);
}

/// The guest's gas left, read from its `gear_gas` global.
fn gas_left(caller: &Caller<'_, Host>) -> i64 {
    match caller
        .get_export(gear_wasm_instrument::GLOBAL_NAME_GAS)
        .and_then(wasmi::Extern::into_global)
        .map(|global| global.get(caller))
    {
        Some(Val::I64(gas)) => gas,
        _ => 0,
    }
}

/// `env.gas_mark(kind)`: an allocator call of `kind` starts (0–3) or ends (4).
fn mark(mut caller: Caller<'_, Host>, kind: i32) -> Result<(), wasmi::Error> {
    let left = gas_left(&caller);
    let host = caller.data_mut();
    match (host.mark.take(), kind) {
        (None, 0..=3) => host.mark = Some((kind as usize, left, host.gas, host.pages)),
        (Some((kind, before, host_gas, pages)), 4) => {
            let cost = Cost {
                instructions: (before - left) as u64,
                host: host.gas - host_gas,
                pages: host.pages - pages,
            };
            host.marked.push((kind, cost));
        }
        (open, _) => {
            return Err(wasmi::Error::new(format!(
                "gas_mark({kind}) out of order (open mark: {open:?})"
            )))
        }
    }
    Ok(())
}

/// `env.gas_read(ptr, len)`: copies the message's payload into the guest.
fn read(mut caller: Caller<'_, Host>, ptr: u32, len: u32) -> Result<(), wasmi::Error> {
    let payload = std::mem::take(&mut caller.data_mut().payload);
    let memory = caller
        .data()
        .memory
        .ok_or_else(|| wasmi::Error::new("no memory"))?;
    if payload.len() != len as usize {
        return Err(wasmi::Error::new(
            "gas_read of another length than the payload's",
        ));
    }
    memory
        .write(&mut caller, ptr as usize, &payload)
        .map_err(|e| wasmi::Error::new(format!("gas_read: {e}")))?;
    caller.data_mut().touch(ptr as u64, len as u64, true);
    Ok(())
}

/// `env.gas_reply(ptr, len)`: the reply is read (its pages charged as reads) and kept as the
/// last reply.
fn reply(mut caller: Caller<'_, Host>, ptr: u32, len: u32) -> Result<(), wasmi::Error> {
    let memory = caller
        .data()
        .memory
        .ok_or_else(|| wasmi::Error::new("no memory"))?;
    // Copied from inside the memory: a length past its end is refused, never allocated.
    let reply = memory
        .data(&caller)
        .get(ptr as usize..ptr as usize + len as usize)
        .ok_or_else(|| wasmi::Error::new("gas_reply: the reply lies outside the memory"))?
        .to_vec();
    let host = caller.data_mut();
    host.reply = reply;
    host.touch(ptr as u64, len as u64, false);
    Ok(())
}

/// `env.gr_system_break(code)`: out of gas or stack; ends the call with a trap.
fn system_break(_: Caller<'_, Host>, code: i32) -> Result<(), wasmi::Error> {
    Err(wasmi::Error::new(format!(
        "gr_system_break({code}): out of gas or stack"
    )))
}
