//! The engine on a small graph whose BFS is computed here directly.

use super::{run, Cluster, Options, Space};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// States 0..n; `x` steps to `(3x + 1) mod n` and `(x + 7) mod n`; reaching `bad` is a failure.
struct Graph {
    n: u32,
    bad: u32,
}

impl Space for Graph {
    type State = u32;
    type Action = u8;
    type Finding = u32;
    type Stored = u32;
    fn store(&self, s: u32) -> u32 {
        s
    }
    fn load(&self, s: u32) -> Result<u32, String> {
        Ok(s)
    }
    fn roots(&self) -> Vec<u32> {
        vec![0]
    }
    fn fingerprint(&self, s: &u32) -> u64 {
        crate::fingerprint::hasher().hash_one(s)
    }
    fn expand(&self, s: &u32, out: &mut Vec<(u8, u32)>, _: &mut Vec<u32>) {
        out.push((0, (3 * s + 1) % self.n));
        out.push((1, (s + 7) % self.n));
    }
    fn check(&self, s: &u32, findings: &mut Vec<u32>) {
        if *s == self.bad {
            findings.push(*s);
        }
    }
    fn is_failure(&self, _: &u32) -> bool {
        true
    }
}

/// Reachable states and each one's least depth.
fn bfs(g: &Graph) -> HashMap<u32, u32> {
    let mut depth = HashMap::from([(0, 0)]);
    let mut queue = VecDeque::from([0]);
    while let Some(x) = queue.pop_front() {
        let mut out = Vec::new();
        g.expand(&x, &mut out, &mut Vec::new());
        for (_, y) in out {
            if !depth.contains_key(&y) {
                depth.insert(y, depth[&x] + 1);
                queue.push_back(y);
            }
        }
    }
    depth
}

fn opts(workers: usize, stop_at_failure: bool) -> Options {
    Options {
        cluster: Cluster::local(workers),
        default_workers: 1,
        stop_at_failure,
        ..Options::default()
    }
}

#[test]
fn counts_levels_and_a_shortest_path_match_a_plain_bfs() {
    let g = Graph { n: 5000, bad: 4321 };
    let depths = bfs(&g);
    let levels = depths.values().max().expect("non-empty") + 1;
    let g = Arc::new(g);
    for workers in [1, 2, 3, 4] {
        let o = run(g.clone(), opts(workers, false))
            .expect("runs")
            .expect("process 0");
        assert_eq!(o.unique, depths.len() as u64, "{workers} workers");
        assert_eq!(
            o.generated,
            2 * depths.len() as u64 + 1,
            "{workers} workers"
        );
        assert_eq!(o.levels, levels, "{workers} workers");
        assert!(!o.stopped);
        let (found, trace) = o.failure.expect("the bad state is reachable");
        assert_eq!(found.level, depths[&4321]);
        assert_eq!(trace.steps.len() as u32, depths[&4321], "a shortest path");
        let (root, path) = trace.replay(&*g).expect("replays");
        assert_eq!(root, 0);
        assert_eq!(
            path.last().map(|(_, s)| *s),
            Some(4321),
            "the path leads to the finding"
        );
    }
}

#[test]
fn a_failure_ends_the_search_after_its_level() {
    let g = Graph { n: 5000, bad: 22 };
    let depths = bfs(&g);
    let d = depths[&22];
    let o = run(Arc::new(g), opts(2, true))
        .expect("runs")
        .expect("process 0");
    assert!(o.stopped);
    // Levels up to d are explored (d + 1 is generated, then dropped).
    let through_d = depths.values().filter(|&&x| x <= d).count() as u64;
    assert_eq!(o.unique, through_d);
    assert_eq!(o.failure.expect("found").1.steps.len() as u32, d);
}

/// A space whose stored form of state `bad` does not load: the search ends with an error naming it,
/// on one worker and on two.
#[test]
fn a_state_that_does_not_load_is_an_error() {
    struct Broken(Graph);
    impl Space for Broken {
        type State = u32;
        type Action = u8;
        type Finding = u32;
        type Stored = u32;
        fn store(&self, s: u32) -> u32 {
            s
        }
        fn load(&self, s: u32) -> Result<u32, String> {
            if s == self.0.bad {
                Err(format!("state {s} does not load"))
            } else {
                Ok(s)
            }
        }
        fn roots(&self) -> Vec<u32> {
            self.0.roots()
        }
        fn fingerprint(&self, s: &u32) -> u64 {
            self.0.fingerprint(s)
        }
        fn expand(&self, s: &u32, out: &mut Vec<(u8, u32)>, f: &mut Vec<u32>) {
            self.0.expand(s, out, f)
        }
        fn check(&self, _: &u32, _: &mut Vec<u32>) {}
        fn is_failure(&self, _: &u32) -> bool {
            true
        }
    }
    let g = Arc::new(Broken(Graph { n: 5000, bad: 4321 }));
    for workers in [1, 2] {
        let err = run(g.clone(), opts(workers, false))
            .err()
            .expect("the search fails");
        assert_eq!(err.0, "state 4321 does not load", "{workers} workers");
    }
}

fn spilling(workers: usize, dir: &std::path::Path, budget: u64) -> Options {
    let mut o = opts(workers, false);
    o.cluster.spill_dir = Some(dir.to_path_buf());
    o.cluster.frontier_memory = Some(budget);
    o
}

/// A budget of a few states sends most of every level to disk: the counts, levels and shortest
/// path stay the plain BFS's, and no file is left behind.
#[test]
fn a_spilled_frontier_gives_the_same_search() {
    let g = Graph { n: 5000, bad: 4321 };
    let depths = bfs(&g);
    let g = Arc::new(g);
    let dir = tempfile::tempdir().unwrap();
    for workers in [1, 2] {
        let o = run(g.clone(), spilling(workers, dir.path(), 300))
            .expect("runs")
            .expect("process 0");
        assert!(o.spilled > depths.len() as u64 / 2, "{}", o.spilled);
        assert_eq!(o.unique, depths.len() as u64, "{workers} workers");
        assert_eq!(o.generated, 2 * depths.len() as u64 + 1);
        assert_eq!(o.levels, depths.values().max().unwrap() + 1);
        let (found, trace) = o.failure.expect("the bad state is reachable");
        assert_eq!(found.level, depths[&4321]);
        assert_eq!(trace.steps.len() as u32, depths[&4321]);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
    // A budget above the largest level spills nothing.
    let o = run(g, spilling(2, dir.path(), 1 << 30)).unwrap().unwrap();
    assert_eq!((o.spilled, o.unique), (0, depths.len() as u64));
}

/// A state stored as a `u32` that does not read back when it is `BAD`, as a damaged record that
/// passed its checksum would not.
#[derive(Clone)]
struct Picky(u32);
const BAD: u32 = 4321;

impl serde::Serialize for Picky {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Picky {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = u32::deserialize(d)?;
        if v == BAD {
            return Err(serde::de::Error::custom(format!("state {v} is damaged")));
        }
        Ok(Picky(v))
    }
}

struct PickyGraph(Graph);

impl Space for PickyGraph {
    type State = u32;
    type Action = u8;
    type Finding = u32;
    type Stored = Picky;
    fn store(&self, s: u32) -> Picky {
        Picky(s)
    }
    fn load(&self, s: Picky) -> Result<u32, String> {
        Ok(s.0)
    }
    fn roots(&self) -> Vec<u32> {
        self.0.roots()
    }
    fn fingerprint(&self, s: &u32) -> u64 {
        self.0.fingerprint(s)
    }
    fn expand(&self, s: &u32, out: &mut Vec<(u8, u32)>, f: &mut Vec<u32>) {
        self.0.expand(s, out, f)
    }
    fn check(&self, _: &u32, _: &mut Vec<u32>) {}
    fn is_failure(&self, _: &u32) -> bool {
        true
    }
}

/// A spill file that does not read back ends the search with an error naming the file and the
/// record (the same search in memory succeeds); so does a spill directory that cannot be written.
#[test]
fn a_bad_spill_file_ends_the_search_with_an_error() {
    let g = Arc::new(PickyGraph(Graph { n: 5000, bad: 0 }));
    let in_memory = run(g.clone(), opts(2, false)).expect("runs").unwrap();
    assert!(!in_memory.stopped);
    let dir = tempfile::tempdir().unwrap();
    for workers in [1, 2] {
        let err = run(g.clone(), spilling(workers, dir.path(), 100))
            .err()
            .expect("the search fails");
        assert!(
            err.0.starts_with("spill file ") && err.0.ends_with("state 4321 is damaged"),
            "{workers} workers: {err}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
    let gone = dir.path().join("missing");
    let err = run(g, spilling(2, &gone, 100)).err().expect("fails");
    assert!(
        err.0.contains("missing") && err.0.contains("No such file"),
        "{err}"
    );
}
