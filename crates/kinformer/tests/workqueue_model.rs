//! The queue against a straightforward model of client-go's semantics, on random operation
//! sequences.

use std::collections::{HashSet, VecDeque};

use futures::FutureExt;
use kinformer::workqueue::Queue;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    Get,
    /// `done` for the n-th item currently held (modulo), or for an arbitrary key if none.
    Done(usize),
    DoneStray(u8),
    ShutDown,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..6).prop_map(Op::Add),
        3 => Just(Op::Get),
        3 => any::<usize>().prop_map(Op::Done),
        1 => (0u8..6).prop_map(Op::DoneStray),
        1 => Just(Op::ShutDown),
    ]
}

/// client-go's queue, written as plainly as possible.
#[derive(Default)]
struct Model {
    queue: VecDeque<u8>,
    dirty: HashSet<u8>,
    processing: HashSet<u8>,
    shutting_down: bool,
}

impl Model {
    fn add(&mut self, k: u8) {
        if self.shutting_down || self.dirty.contains(&k) {
            return;
        }
        self.dirty.insert(k);
        if !self.processing.contains(&k) {
            self.queue.push_back(k);
        }
    }
    /// `Some(answer)` if `get` would return now, `None` if it would wait.
    fn get(&mut self) -> Option<Option<u8>> {
        match self.queue.pop_front() {
            Some(k) => {
                self.dirty.remove(&k);
                self.processing.insert(k);
                Some(Some(k))
            }
            None if self.shutting_down => Some(None),
            None => None,
        }
    }
    fn done(&mut self, k: u8) {
        // Only items being processed are affected (a stray `done` changes nothing).
        if self.processing.remove(&k) && self.dirty.contains(&k) {
            self.queue.push_back(k);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn queue_behaves_like_the_model(ops in proptest::collection::vec(op(), 1..200)) {
        let queue: Queue<u8> = Queue::new();
        let mut model = Model::default();
        let mut held: Vec<u8> = Vec::new();
        for op in ops {
            match op {
                Op::Add(k) => {
                    queue.add(k);
                    model.add(k);
                }
                Op::Get => {
                    let got = queue.get().now_or_never();
                    prop_assert_eq!(got, model.get());
                    if let Some(Some(k)) = got {
                        prop_assert!(!held.contains(&k), "{} handed out twice", k);
                        held.push(k);
                    }
                }
                Op::Done(i) => {
                    if !held.is_empty() {
                        let k = held.swap_remove(i % held.len());
                        queue.done(&k);
                        model.done(k);
                    }
                }
                Op::DoneStray(k) => {
                    if !held.contains(&k) {
                        queue.done(&k);
                        model.done(k);
                    }
                }
                Op::ShutDown => {
                    queue.shut_down();
                    model.shutting_down = true;
                }
            }
            prop_assert_eq!(queue.len(), model.queue.len());
            prop_assert_eq!(queue.is_shutting_down(), model.shutting_down);
        }
    }
}
