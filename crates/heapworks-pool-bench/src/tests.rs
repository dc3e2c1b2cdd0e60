use super::*;
use heapworks_bench::results::Summary;
use heapworks_bench::workloads::Scale;

#[test]
fn filter_picks_workloads_and_variants_in_canonical_order() {
    let selection =
        PoolSelection::from_filter(&["shm_with_pool,pool_sizes".into(), "fill_existing".into()])
            .unwrap();
    assert_eq!(selection.workloads, vec![PoolWorkload::Sizes]);
    assert_eq!(
        selection.variants,
        vec![Variant::FillExisting, Variant::ShmWithPool]
    );
    assert!(selection.peers.is_empty());
    let everything = PoolSelection::from_filter(&[]).unwrap();
    assert_eq!(everything.workloads, PoolWorkload::DEFAULT);
    let counted = PoolSelection::from_filter(&["pool_instructions".into()]).unwrap();
    assert_eq!(counted.workloads, [PoolWorkload::Instructions]);
    assert_eq!(everything.variants, Variant::DEFAULT);
    assert_eq!(everything.peers, peers::PEERS);
    let peer = PoolSelection::from_filter(&["jemalloc,glibc".into()]).unwrap();
    assert!(peer.variants.is_empty());
    assert_eq!(peer.peers, [CMalloc::Glibc, CMalloc::Jemalloc]);
    assert!(PoolSelection::from_filter(&["tcmalloc".into()]).is_err());
    let error = PoolSelection::from_filter(&["talc".into()]).unwrap_err();
    assert!(error.contains("`talc`") && error.contains("pool_budget_pressure"));
}

#[test]
fn a_tiny_run_measures_every_variant_of_pool_sizes_in_this_process() {
    let mut config = Config::at_scale(Scale::Tiny, 1);
    config.duration = std::time::Duration::ZERO;
    let selection = PoolSelection::from_filter(&[
        "pool_sizes".into(),
        "inline_without_pool,inline_with_pool,inline_fresh_mapping".into(),
    ])
    .unwrap();
    let results = run(&config, &selection, &heapworks_bench::progress::Silent);
    assert_eq!(results.cells.len(), 3 * sizes::sizes(&config).len());
    assert!(results.cells.iter().all(|c| c.median().is_some()));
    assert!(failure_notes(&results).is_empty());
}

#[test]
fn outputs_that_do_not_apply_to_a_column_have_no_cell_and_failures_fill_every_cell() {
    let task = Task {
        workload: PoolWorkload::VariableShape,
        case: "case".into(),
        outputs: vec![STEP_US, HIT_RATE],
        deterministic: false,
        run: Box::new(|_, _| Ok(vec![])),
    };
    let trials = Ok(vec![vec![Some(2.0), None], vec![Some(4.0), None]]);
    let cells = cells_of(&task, "inline_without_pool", &trials);
    let metrics: Vec<&str> = cells.iter().map(|c| c.metric.as_str()).collect();
    assert_eq!(metrics, [STEP_US.name]);
    assert_eq!(cells[0].median(), Some(3.0));
    let failed = cells_of(&task, "vec+jemalloc", &Err("missing: x".into()));
    assert_eq!(failed.len(), 2);
    assert_eq!(
        failure_notes(&Results {
            cells: failed,
            ..Results::default()
        })
        .len(),
        1
    );
}

fn cell(case: &str, variant: Variant, ns: f64) -> Cell {
    Cell::of(
        PoolWorkload::Sizes.name(),
        case,
        variant.name(),
        &TIME_NS,
        Outcome::Measured(Summary::single(ns)),
    )
}

#[test]
fn targets_are_judged_from_the_medians() {
    let hd = sizes::label(sizes::HD_F32);
    let mib = sizes::label(1 << 20);
    let tiny = sizes::label(4);
    let results = Results {
        cells: vec![
            cell(&hd, Variant::FillExisting, 5.0e6),
            cell(&hd, Variant::InlineWithPool, 5.1e6),
            cell(&hd, Variant::InlineWithoutPool, 20.0e6),
            cell(&hd, Variant::ShmWithPool, 5.2e6),
            cell(&mib, Variant::InlineWithPool, 100.0),
            cell(&mib, Variant::ShmWithPool, 120.0),
            cell(&tiny, Variant::InlineWithPool, 45.0),
            cell(&tiny, Variant::InlineWithoutPool, 20.0),
            cell(&tiny, Variant::ShmWithPool, 900.0),
        ],
        ..Results::default()
    };
    let notes = targets::notes(&results);
    assert_eq!(notes.len(), 4, "{notes:?}");
    assert!(
        notes[0].starts_with("target met") && notes[0].contains("1.020×"),
        "{}",
        notes[0]
    );
    assert!(
        notes[1].starts_with("target met") && notes[1].contains("3.92×"),
        "{}",
        notes[1]
    );
    assert!(
        notes[2].starts_with("target MISSED") && notes[2].contains("+25.0 ns"),
        "{}",
        notes[2]
    );
    assert!(
        notes[3].starts_with("target MISSED") && notes[3].contains("1.200×"),
        "{}",
        notes[3]
    );
    assert!(
        notes[3].contains(&mib),
        "the tiny size is not judged: {}",
        notes[3]
    );
}

#[test]
fn the_pool_must_beat_every_peer_at_large_sizes() {
    let mib = sizes::label(1 << 20);
    let peer = |name: &str, ns: f64| {
        Cell::of(
            PoolWorkload::Sizes.name(),
            &mib,
            name,
            &TIME_NS,
            Outcome::Measured(Summary::single(ns)),
        )
    };
    let results = Results {
        cells: vec![
            cell(&mib, Variant::InlineWithPool, 100.0),
            peer("vec+glibc", 300.0),
            peer("vec+jemalloc", 80.0),
        ],
        ..Results::default()
    };
    let notes = targets::notes(&results);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].starts_with("target MISSED"), "{}", notes[0]);
    assert!(notes[0].contains("vec+jemalloc = 1.250"), "{}", notes[0]);
}
