//! `heapworks-gas`: see the crate's README.
mod guests;
mod instrument;
mod machine;
mod schedule;

fn main() {
    let dir = guests::build().unwrap();
    for guest in guests::GUESTS {
        let wasm = std::fs::read(dir.join(guest.file)).unwrap();
        let mut m = machine::Machine::new(&wasm, 16384).unwrap();
        m.begin_message();
        let (p, c1) = m.alloc(81, 8).unwrap();
        let (q, c2) = m.alloc(81, 8).unwrap();
        let c3 = m.dealloc(p, 81, 8).unwrap();
        let c4 = m.dealloc(q, 81, 8).unwrap();
        println!("{} {:?} {:?} {:?} {:?}", guest.name, c1, c2, c3, c4);
    }
}
