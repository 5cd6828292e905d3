//! The single-threaded executor inside a plugin: it polls the tasks that
//! are ready, in the order they were woken, until every task waits.
//!
//! There is no I/O and no clock to wait on: a task waits for a request's
//! result or a timer, both of which arrive in a later call of the plugin
//! (the host's `Input`), which wakes it. One call of the plugin is one
//! [`Executor::run_until_stalled`]. The order is deterministic: tasks are
//! polled first-woken, first-polled, and a task woken twice before it is
//! polled is polled once.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Wake, Waker};

/// How many polls one call may make before the executor decides a task
/// wakes itself forever (a busy loop) and panics, rather than spinning
/// until the host's fuel runs out without a word.
pub const MAX_POLLS_PER_CALL: usize = 1_000_000;

/// A task's number, in spawn order.
pub type TaskId = u64;

/// A task: a future with nothing left to return.
type Task = Pin<Box<dyn Future<Output = ()>>>;

/// The tasks that were woken and not yet polled, in wake order.
#[derive(Debug, Default)]
struct ReadyQueue {
    order: VecDeque<TaskId>,
    queued: BTreeSet<TaskId>,
}

impl ReadyQueue {
    fn push(&mut self, id: TaskId) {
        if self.queued.insert(id) {
            self.order.push_back(id);
        }
    }

    fn pop(&mut self) -> Option<TaskId> {
        let id = self.order.pop_front()?;
        self.queued.remove(&id);
        Some(id)
    }
}

/// Wakes one task by putting it on the ready queue.
struct TaskWaker {
    id: TaskId,
    ready: Arc<Mutex<ReadyQueue>>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // One thread: a poisoned lock only means a task panicked, and the
        // queue itself is still consistent.
        self.ready.lock().unwrap_or_else(PoisonError::into_inner).push(self.id);
    }
}

/// The executor of one plugin instance (see the module documentation).
pub struct Executor {
    tasks: BTreeMap<TaskId, Task>,
    ready: Arc<Mutex<ReadyQueue>>,
    next_id: TaskId,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor").field("tasks", &self.tasks.len()).field("next_id", &self.next_id).finish()
    }
}

impl Default for Executor {
    fn default() -> Self {
        Executor::new()
    }
}

impl Executor {
    /// No tasks.
    pub fn new() -> Executor {
        Executor { tasks: BTreeMap::new(), ready: Arc::default(), next_id: 0 }
    }

    /// Adds a task, ready to be polled by the next
    /// [`Executor::run_until_stalled`]; returns its id.
    pub fn spawn(&mut self, future: impl Future<Output = ()> + 'static) -> TaskId {
        let id = self.next_id;
        self.next_id += 1;
        self.tasks.insert(id, Box::pin(future));
        self.lock().push(id);
        id
    }

    /// How many tasks have not finished.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether every task has finished.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Polls ready tasks, first woken first, until none is ready: every
    /// task left waits for something a later call brings. Returns how many
    /// polls it made. Panics after [`MAX_POLLS_PER_CALL`] polls.
    pub fn run_until_stalled(&mut self) -> usize {
        let mut polls = 0;
        loop {
            // The guard must not live through the poll: a task wakes others.
            let next = self.lock().pop();
            let Some(id) = next else { break };
            // A wake of a task that has finished since is stale.
            let Some(mut task) = self.tasks.remove(&id) else { continue };
            polls += 1;
            if polls > MAX_POLLS_PER_CALL {
                panic!(
                    "a task was polled more than {MAX_POLLS_PER_CALL} times in one call: it wakes itself without \
                     waiting for anything (a busy loop); await an API call or a requeue instead"
                );
            }
            let waker = Waker::from(Arc::new(TaskWaker { id, ready: self.ready.clone() }));
            if task.as_mut().poll(&mut Context::from_waker(&waker)).is_pending() {
                self.tasks.insert(id, task);
            }
        }
        polls
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ReadyQueue> {
        self.ready.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::task::Poll;

    /// A future that waits until `gate` holds a waker and is opened.
    #[derive(Default)]
    struct Gate {
        open: bool,
        waker: Option<Waker>,
    }

    fn wait(gate: Rc<RefCell<Gate>>) -> impl Future<Output = ()> {
        std::future::poll_fn(move |cx| {
            let mut gate = gate.borrow_mut();
            if gate.open {
                Poll::Ready(())
            } else {
                gate.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        })
    }

    fn open(gate: &Rc<RefCell<Gate>>) {
        let mut gate = gate.borrow_mut();
        gate.open = true;
        if let Some(waker) = gate.waker.take() {
            waker.wake();
        }
    }

    #[test]
    fn tasks_run_until_they_wait_and_resume_in_the_order_they_were_woken() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let gates: Vec<Rc<RefCell<Gate>>> = (0..3).map(|_| Rc::default()).collect();
        let mut executor = Executor::new();
        for (i, gate) in gates.iter().enumerate() {
            let (log, gate) = (log.clone(), gate.clone());
            executor.spawn(async move {
                log.borrow_mut().push(format!("start {i}"));
                wait(gate).await;
                log.borrow_mut().push(format!("end {i}"));
            });
        }
        assert_eq!(executor.run_until_stalled(), 3);
        assert_eq!(executor.len(), 3, "every task waits on its gate");
        // Woken 2, then 0, then 2 again: polled 2 then 0, and 2 only once.
        open(&gates[2]);
        open(&gates[0]);
        assert_eq!(executor.run_until_stalled(), 2);
        assert_eq!(*log.borrow(), ["start 0", "start 1", "start 2", "end 2", "end 0"]);
        assert_eq!(executor.len(), 1);
        assert_eq!(executor.run_until_stalled(), 0, "nothing was woken");
    }

    #[test]
    fn a_task_woken_twice_before_it_is_polled_is_polled_once() {
        let polls = Rc::new(RefCell::new(0));
        let stored: Rc<RefCell<Option<Waker>>> = Rc::default();
        let mut executor = Executor::new();
        let (count, slot) = (polls.clone(), stored.clone());
        executor.spawn(std::future::poll_fn(move |cx| {
            *count.borrow_mut() += 1;
            *slot.borrow_mut() = Some(cx.waker().clone());
            Poll::<()>::Pending
        }));
        executor.run_until_stalled();
        let waker = stored.borrow().clone().unwrap();
        waker.wake_by_ref();
        waker.wake_by_ref();
        executor.run_until_stalled();
        assert_eq!(*polls.borrow(), 2);
    }

    #[test]
    #[should_panic(expected = "wakes itself without waiting")]
    fn a_task_that_wakes_itself_forever_panics_instead_of_hanging() {
        let mut executor = Executor::new();
        executor.spawn(std::future::poll_fn(|cx| {
            cx.waker().wake_by_ref();
            Poll::<()>::Pending
        }));
        executor.run_until_stalled();
    }
}
