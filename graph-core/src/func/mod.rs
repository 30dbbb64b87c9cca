//! The runtime of the Functional API (LangGraph's `@task` / `@entrypoint`):
//! ordinary control flow made durable by saving each task call's result.
//!
//! An entrypoint runs as the one node of a graph; every call of a `#[task]` made
//! while it runs is numbered in call order (under the task that made it). When
//! a call finishes, its result is stored as a pending write of the checkpoint
//! the entrypoint started from, under a task id derived from the caller's id
//! and the call's number, with the task's name and a hash of its arguments.
//! An [`interrupt`] inside a call has the call's own interrupt id (a hash of its
//! namespace, as LangGraph's `@task` has), and its answers are kept per call,
//! so parallel calls that each ask are answered by id, in any order. When
//! the thread runs again (`Command::resume` after an interrupt, or after a
//! crash or a failure), the entrypoint starts over and each call that already
//! finished returns its stored result without running; a call whose name or
//! arguments differ from the stored one at that position fails with
//! [`FuncError::NonDeterministic`] instead of returning another call's result.
//!
//! The macros `#[task]` and `#[entrypoint]` (in the facade) expand to this
//! module's `__call` and [`EntrypointFn`]; user code sees [`TaskFuture`],
//! [`Final`] and [`interrupt`].
//!
//! ```
//! use stategraph::func::{entrypoint, task, Entrypoint};
//! use stategraph::prelude::*;
//!
//! #[task]
//! async fn double(n: u32) -> u32 {
//!     n * 2
//! }
//!
//! #[entrypoint]
//! async fn sum_of_doubles(ns: Vec<u32>) -> Result<u32, NodeError> {
//!     let doubled = futures::future::try_join_all(ns.into_iter().map(double)).await?;
//!     Ok(doubled.into_iter().sum())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), GraphError> {
//! let app = Entrypoint::new(sum_of_doubles).compile()?;
//! let out = app.invoke(vec![1, 2, 3], &RunConfig::new()).await?;
//! assert_eq!(out.value, Some(12));
//! # Ok(())
//! # }
//! ```

use crate::cache::CachePolicy;
use crate::checkpoint::{Blob, CheckpointConfig, CheckpointError, PendingWrite, SharedStr};
use crate::context::{CallEvent, Context};
use crate::error::NodeError;
use crate::interrupt::Scratchpad;
use crate::store::Store;
use futures::FutureExt;
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::Poll;

/// The channel of a task call's result in the checkpoint's pending writes.
pub(crate) const RETURN: &str = "__return__";
/// The channel of a task call's identity (name, argument hash).
pub(crate) const CALL: &str = "__call__";
/// The channel of the answers a paused task call consumed.
const RESUME: &str = "__resume__";

tokio::task_local! {
    /// The task call scope of the running node (or task call).
    static CURRENT: Scope;
}

/// Where task calls are numbered: a running node's task (an entrypoint is
/// one), or a running task call, whose own calls are numbered under it (so
/// parallel tasks calling tasks number deterministically).
#[derive(Clone)]
enum Scope {
    Node(Context),
    Call(Arc<CallScope>),
}

/// A running task call, as the scope of the calls it makes.
struct CallScope {
    ctx: Context,
    /// The task.
    name: &'static str,
    /// The call's id.
    id: String,
    /// The next call's number.
    calls: AtomicU32,
    /// The call's interrupts: its id, its answers (stored ones, then the one
    /// `Command::resume_map` gives its id, then the run's resume value).
    pad: Scratchpad,
}

impl Scope {
    fn ctx(&self) -> &Context {
        match self {
            Scope::Node(ctx) => ctx,
            Scope::Call(call) => &call.ctx,
        }
    }

    /// The id of the task whose calls these are.
    fn parent(&self) -> &str {
        match self {
            Scope::Node(ctx) => ctx.task_id(),
            Scope::Call(call) => &call.id,
        }
    }

    /// The number of the next call.
    fn next_call(&self) -> u32 {
        match self {
            Scope::Node(ctx) => ctx.next_task_call(),
            Scope::Call(call) => call.calls.fetch_add(1, Ordering::Relaxed),
        }
    }
}

/// Runs `fut` so that the task calls it makes are numbered, saved and reused
/// under `ctx`'s task. The engine runs every node this way; call it for a
/// future the node spawns (`tokio::spawn` does not carry the scope along).
pub fn scoped<F: Future>(ctx: Context, fut: F) -> impl Future<Output = F::Output> {
    CURRENT.scope(Scope::Node(ctx), fut)
}

/// A node's future, polled inside its task's call scope (no allocation: the
/// scope is set around each poll).
pub(crate) struct Scoped<F> {
    fut: F,
    ctx: Option<Context>,
}

impl<F> Scoped<F> {
    pub(crate) fn new(fut: F, ctx: Option<Context>) -> Self {
        Scoped { fut, ctx }
    }
}

impl<F: Future + Unpin> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        match &this.ctx {
            Some(ctx) => CURRENT.sync_scope(Scope::Node(ctx.clone()), || {
                Pin::new(&mut this.fut).poll(cx)
            }),
            None => Pin::new(&mut this.fut).poll(cx),
        }
    }
}

/// A failure of a task call, as the call's `Err` (a [`NodeError`] whose
/// source is this value; the run fails with it unless the caller handles it).
/// In each case the thread stays resumable: nothing wrong was stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FuncError {
    /// A task was called where no entrypoint or graph node runs (a spawned
    /// tokio task, a plain `main`).
    #[error(
        "task `{task}` was called outside an entrypoint or a graph node: call it from the body \
         of an #[entrypoint] (or a node, or another task), not from a spawned task or plain code"
    )]
    OutsideEntrypoint {
        /// The task.
        task: &'static str,
    },
    /// `interrupt` was called where no entrypoint or graph node runs.
    #[error(
        "interrupt was called outside an entrypoint, a task or a graph node: it pauses the run \
         that calls it, so call it from their bodies"
    )]
    InterruptOutsideEntrypoint,
    /// The re-run called tasks in another order than the run that saved their
    /// results: the code is not deterministic.
    #[error(
        "call #{position} of the re-run entrypoint is `{task}`{}, but the saved run's call \
         #{position} was `{saved_task}`{}; the entrypoint must call its tasks in the same order \
         with the same arguments on every run (move non-deterministic code, such as time or \
         randomness, into a task)",
        if *.args_differ && task == saved_task { " with other arguments" } else { "" },
        if *.args_differ && task == saved_task { " with the saved arguments" } else { "" }
    )]
    NonDeterministic {
        /// The task called now.
        task: &'static str,
        /// Its position among the calls of its caller (from 0).
        position: u32,
        /// The task the saved run called at that position.
        saved_task: String,
        /// Whether the arguments' hashes differ.
        args_differ: bool,
    },
    /// The task's arguments failed to serialise (for the determinism check).
    #[error("the arguments of task `{task}` cannot be serialised: {source}")]
    Arguments {
        /// The task.
        task: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The task's result failed to serialise, so it cannot be saved.
    #[error("the result of task `{task}` cannot be serialised to be saved: {source}")]
    ResultNotSerializable {
        /// The task.
        task: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The saved result does not deserialise as the task's result type (the
    /// task's type changed since the run that saved it).
    #[error(
        "the saved result of task `{task}` cannot be read as a `{expected}`: {source}; the task's \
         result type changed since the run that saved it"
    )]
    SavedResult {
        /// The task.
        task: &'static str,
        /// The result type.
        expected: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The task panicked.
    #[error("task `{task}` panicked: {message}")]
    Panicked {
        /// The task.
        task: &'static str,
        /// The panic message.
        message: String,
    },
    /// Saving the task's result failed.
    #[error("saving the result of task `{task}` failed: {source}")]
    Save {
        /// The task.
        task: &'static str,
        /// The saver's error.
        #[source]
        source: CheckpointError,
    },
}

/// The future of a task call: its result, once the task ran or its saved
/// result was found. Await it (alone, or with others: `futures::join!`,
/// `try_join_all`) from the entrypoint or task that called it.
#[must_use = "a task call does nothing unless awaited"]
pub struct TaskFuture<T> {
    inner: Pin<Box<dyn Future<Output = Result<T, NodeError>> + Send>>,
}

impl<T> Future for TaskFuture<T> {
    type Output = Result<T, NodeError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

impl<T> std::fmt::Debug for TaskFuture<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskFuture").finish_non_exhaustive()
    }
}

/// A task's options: `#[task(retry = .., timeout = .., cache_policy = ..)]`.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct TaskOptions {
    /// Retries of a failed attempt.
    pub retry: Option<crate::retry::RetryPolicy>,
    /// The time limit of each attempt.
    pub timeout: Option<std::time::Duration>,
    /// How the task's results are cached (in the cache the entrypoint or
    /// graph was compiled with), keyed by the task and its arguments.
    pub cache: Option<CachePolicy>,
    /// Whether the body runs on tokio's blocking pool (a sync task with a
    /// timeout), so that a timed-out attempt is abandoned, not cancelled.
    off_executor: bool,
}

impl TaskOptions {
    /// No retry, no timeout.
    pub fn new() -> Self {
        Self::default()
    }

    /// With a retry policy.
    pub fn retry(mut self, policy: crate::retry::RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// With a timeout per attempt.
    pub fn timeout(mut self, limit: std::time::Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// With a cache policy (LangGraph's `@task(cache_policy=..)`): a call
    /// whose task and arguments were seen before, within the policy's TTL,
    /// returns the cached result without running. The cache is the one given
    /// to [`CompileOptions::cache`](crate::CompileOptions::cache); without one
    /// the policy does nothing.
    pub fn cache_policy(mut self, policy: CachePolicy) -> Self {
        self.cache = Some(policy);
        self
    }

    /// The body runs on tokio's blocking pool (`#[task(timeout = ..)]` on a
    /// sync fn, whose body is [`__off_executor`]).
    #[doc(hidden)]
    pub fn __off_executor(mut self) -> Self {
        self.off_executor = true;
        self
    }
}

/// What a call saves beside its result, to recognise it on a re-run.
#[derive(Serialize, Deserialize)]
struct CallRecord {
    name: String,
    args: String,
}

/// The hash of a task's arguments (xxh3-128 of their JSON forms), fed one
/// argument at a time so that a type that is not `Serialize` is reported at
/// its own span.
#[doc(hidden)]
pub struct __ArgsHash {
    hasher: crate::cache::KeyHasher,
    failed: Option<serde_json::Error>,
}

impl __ArgsHash {
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        __ArgsHash {
            hasher: crate::cache::KeyHasher::new(),
            failed: None,
        }
    }

    /// Adds one argument.
    pub fn add<T: Serialize + Send + 'static>(&mut self, arg: &T) {
        if self.failed.is_none()
            && let Err(e) = serde_json::to_writer(&mut self.hasher, arg)
        {
            self.failed = Some(e);
        }
    }

    /// The hash, or why an argument did not serialise.
    pub fn finish(self) -> Result<u128, serde_json::Error> {
        match self.failed {
            Some(e) => Err(e),
            None => Ok(self.hasher.finish()),
        }
    }
}

/// How a task's result is stored and read back: made by
/// [`__task_result`] where `#[task]` checks the result type, so that a type
/// that is not serde is reported once, at the fn's return type.
#[doc(hidden)]
pub struct __Codec<T> {
    encode: fn(&T) -> Result<Blob, serde_json::Error>,
    decode: fn(&Blob) -> Result<T, serde_json::Error>,
}

/// The codec of a task result type `T` (which must be serde).
#[doc(hidden)]
pub fn __task_result<T: Serialize + DeserializeOwned + Send + 'static>() -> __Codec<T> {
    __Codec {
        encode: |value| Blob::encode(value),
        decode: Blob::decode,
    }
}

/// The attempts of a task call's body: one ([`__once`]) or as many as its retry
/// policy asks ([`__repeat`], whose arguments are cloned for each).
#[doc(hidden)]
pub trait Attempts<Fut>: Send + 'static {
    /// The next attempt, if the body can run again.
    fn next_attempt(&mut self) -> Option<Fut>;
}

#[doc(hidden)]
pub struct Once<B>(Option<B>);

impl<B, Fut> Attempts<Fut> for Once<B>
where
    B: FnOnce() -> Fut + Send + 'static,
{
    fn next_attempt(&mut self) -> Option<Fut> {
        self.0.take().map(|body| body())
    }
}

#[doc(hidden)]
pub struct Repeat<B>(B);

impl<B, Fut> Attempts<Fut> for Repeat<B>
where
    B: FnMut() -> Fut + Send + 'static,
{
    fn next_attempt(&mut self) -> Option<Fut> {
        Some((self.0)())
    }
}

/// A body that runs once (no retry policy).
#[doc(hidden)]
pub fn __once<B, Fut>(body: B) -> Once<B>
where
    B: FnOnce() -> Fut + Send + 'static,
{
    Once(Some(body))
}

/// A body that may run again (a retry policy).
#[doc(hidden)]
pub fn __repeat<B, Fut>(body: B) -> Repeat<B>
where
    B: FnMut() -> Fut + Send + 'static,
{
    Repeat(body)
}

/// A call of task `name` whose arguments hash to `args`: its saved result, or
/// `body` run under `options` (a retry runs it again) and its result saved.
/// The call is numbered now, in call order. `#[task]` expands to this.
#[doc(hidden)]
pub fn __call<T, B, Fut>(
    name: &'static str,
    args: Result<u128, serde_json::Error>,
    codec: __Codec<T>,
    options: TaskOptions,
    body: B,
) -> TaskFuture<T>
where
    T: Send + 'static,
    B: Attempts<Fut>,
    Fut: Future<Output = Result<T, NodeError>> + Send + 'static,
{
    let Ok(scope) = CURRENT.try_with(Scope::clone) else {
        return TaskFuture {
            inner: Box::pin(std::future::ready(Err(NodeError::from(
                FuncError::OutsideEntrypoint { task: name },
            )))),
        };
    };
    let position = scope.next_call();
    let id = call_id(scope.parent(), position);
    TaskFuture {
        inner: Box::pin(run_call(
            scope, id, position, name, args, codec, options, body,
        )),
    }
}

/// The id of call `position` of the task `parent`: a UUID-formed xxh3-128.
fn call_id(parent: &str, position: u32) -> String {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(parent.as_bytes());
    hasher.update(b"\0call\0");
    hasher.update(&position.to_be_bytes());
    crate::ids::format_uuid(&hasher.digest128().to_be_bytes())
}

#[allow(clippy::too_many_arguments)]
async fn run_call<T, B, Fut>(
    scope: Scope,
    id: String,
    position: u32,
    name: &'static str,
    args: Result<u128, serde_json::Error>,
    codec: __Codec<T>,
    options: TaskOptions,
    body: B,
) -> Result<T, NodeError>
where
    T: Send + 'static,
    B: Attempts<Fut>,
    Fut: Future<Output = Result<T, NodeError>> + Send + 'static,
{
    let args = args.map_err(|source| FuncError::Arguments { task: name, source })?;
    let ctx = scope.ctx().clone();
    ctx.emit_call(CallEvent::Start {
        id: &id,
        task: name,
    });
    let args_hex = crate::ids::format_hex(args);
    if let Some(saved) = saved(&ctx, &id) {
        return reuse(name, position, &args_hex, codec.decode, saved);
    }
    // A cached result (a task with a cache policy, in a graph with a cache)
    // is saved as the call's result and reported as an update, not as a task
    // result: LangGraph's `{'task': value, '__metadata__': {'cached': True}}`.
    let cache = options
        .cache
        .as_ref()
        .and_then(|policy| Some((policy, ctx.scope().cache.as_ref()?)));
    if let Some((_, cache)) = cache {
        let hit = cache
            .get(name, args)
            .and_then(|v| v.downcast_ref::<Blob>().cloned());
        if let Some(ret) = hit {
            tracing::debug!(task = name, position, "task call returns its cached result");
            let value = (codec.decode)(&ret).map_err(|source| FuncError::SavedResult {
                task: name,
                expected: std::any::type_name::<T>(),
                source,
            })?;
            save(&ctx, &id, name, args_hex, ret.clone()).await?;
            ctx.emit_call(CallEvent::Done {
                id: &id,
                task: name,
                result: Ok(&ret),
                cached: true,
            });
            return Ok(value);
        }
    }
    let pad = call_pad(&ctx, name, &id);
    let child = Arc::new(CallScope {
        ctx: ctx.clone(),
        name,
        id: id.clone(),
        calls: AtomicU32::new(0),
        pad,
    });
    let value = match attempts(&scope, &child, name, &options, body).await {
        Ok(value) => value,
        Err(error) => {
            if ctx.signalled() {
                // A pause is no result: the call runs again on resume, with
                // the answers it took now.
                if let Some(answers) = child.pad.resume_write() {
                    save_answers(&ctx, &id, name, &answers).await?;
                }
            } else {
                ctx.emit_call(CallEvent::Done {
                    id: &id,
                    task: name,
                    result: Err(error.to_string()),
                    cached: false,
                });
            }
            return Err(error);
        }
    };
    let ret = (codec.encode)(&value)
        .map_err(|source| FuncError::ResultNotSerializable { task: name, source })?;
    if let Some((policy, cache)) = cache {
        // A call that consumed interrupt answers depends on them: not cached.
        if !child.pad.used_answers() {
            cache.set(name, args, Arc::new(ret.clone()), policy.get_ttl());
        }
    }
    save(&ctx, &id, name, args_hex, ret.clone()).await?;
    ctx.emit_call(CallEvent::Done {
        id: &id,
        task: name,
        result: Ok(&ret),
        cached: false,
    });
    Ok(value)
}

/// Runs the attempts of a call's body in the call's scope, under its timeout
/// and retry policy, until one succeeds or the policy gives up.
async fn attempts<T, B, Fut>(
    scope: &Scope,
    child: &Arc<CallScope>,
    name: &'static str,
    options: &TaskOptions,
    mut body: B,
) -> Result<T, NodeError>
where
    B: Attempts<Fut>,
    Fut: Future<Output = Result<T, NodeError>> + Send + 'static,
{
    let policy = options.retry.as_ref();
    let mut attempt = 1;
    loop {
        child.calls.store(0, Ordering::Relaxed);
        child.pad.restart();
        let Some(body) = body.next_attempt() else {
            return Err(NodeError::msg(format!(
                "task `{name}` cannot run again: give it a retry policy in #[task(retry = ..)]"
            )));
        };
        let fut =
            AssertUnwindSafe(CURRENT.scope(Scope::Call(Arc::clone(child)), body)).catch_unwind();
        let outcome = match options.timeout {
            Some(limit) => match tokio::time::timeout(limit, fut).await {
                Ok(outcome) => outcome,
                Err(_) => Ok(Err(NodeError::from(crate::error::NodeTimeout {
                    node: name.to_owned(),
                    limit,
                    abandoned: options.off_executor,
                }))),
            },
            None => fut.await,
        };
        let error = match outcome {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(e)) => e,
            Err(panic) => {
                return Err(FuncError::Panicked {
                    task: name,
                    message: crate::unwind::message(&*panic),
                }
                .into())
            }
        };
        // A pause is never retried.
        if scope.ctx().signalled() {
            return Err(error);
        }
        let wait = match policy {
            Some(policy) => crate::unwind::catch(|| policy.next_wait(attempt, &error))
                .ok()
                .flatten(),
            None => None,
        };
        let Some(wait) = wait else {
            return Err(error);
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        attempt += 1;
    }
}

/// The body of a sync task with a timeout: run on tokio's blocking pool (in
/// the call's scope), so that the timeout fires on time. A thread cannot be
/// interrupted: past the limit the attempt is abandoned — it runs to its end
/// in the background, its result discarded — as a sync node's is.
/// `#[task(timeout = ..)]` on a sync fn expands to this.
#[doc(hidden)]
pub async fn __off_executor<T, F>(name: &'static str, body: F) -> Result<T, NodeError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, NodeError> + Send + 'static,
{
    let scope = CURRENT.try_with(Scope::clone).ok();
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return Err(NodeError::msg(format!(
            "task `{name}` has a timeout, which needs a tokio runtime with its timer; run the \
             entrypoint inside one (e.g. #[tokio::main]) or remove the timeout"
        )));
    };
    let attempt = runtime.spawn_blocking(move || match scope {
        Some(scope) => CURRENT.sync_scope(scope, body),
        None => body(),
    });
    match attempt.await {
        Ok(result) => result,
        // Raised again here, where the call catches panics.
        Err(joined) if joined.is_panic() => std::panic::resume_unwind(joined.into_panic()),
        Err(_) => Err(NodeError::msg(format!(
            "task `{name}` was cancelled on tokio's blocking pool: the runtime is shutting down"
        ))),
    }
}

/// A loaded checkpoint's pending writes, shared with the tasks of the step
/// that continues it, when some are writes of task calls (results, and answers
/// of paused calls); `None` otherwise. Moved, not copied: readers look the
/// writes of a call up by its id, which no other write has.
pub(crate) fn saved_calls(pending: Vec<PendingWrite>) -> Option<Arc<[PendingWrite]>> {
    let of_calls =
        |w: &PendingWrite| w.channel == RETURN || w.channel == CALL || w.channel == RESUME;
    pending.iter().any(of_calls).then(|| Arc::from(pending))
}

/// The scratchpad of call `id` of task `name`: its interrupts' id (a hash of
/// its namespace), the answers it stored when it paused, the one
/// `Command::resume_map` gives that id, and the run's resume value.
fn call_pad(ctx: &Context, name: &str, id: &str) -> Scratchpad {
    let step = ctx.scope();
    let pad_id =
        crate::interrupt::interrupt_id(&crate::ids::task_namespace(&step.graph_ns, name, id));
    let mut answers = step
        .saved_calls
        .as_deref()
        .and_then(|writes| {
            writes
                .iter()
                .find(|w| w.task_id == id && w.channel == RESUME)
        })
        .map(|w| crate::interrupt::decode_answers(&w.value))
        .unwrap_or_default();
    if let Some((_, answer)) = step
        .resume_map
        .as_deref()
        .and_then(|map| map.iter().find(|(k, _)| *k == pad_id))
    {
        answers.push(answer.clone());
    }
    Scratchpad::new(pad_id, answers, step.null_resume.clone())
}

/// The saved writes of call `id`, if the run continues a checkpoint that has them.
fn saved<'a>(ctx: &'a Context, id: &str) -> Option<(&'a PendingWrite, Option<&'a PendingWrite>)> {
    let writes = ctx.scope().saved_calls.as_deref()?;
    let ret = writes
        .iter()
        .find(|w| w.task_id == id && w.channel == RETURN)?;
    let record = writes.iter().find(|w| w.task_id == id && w.channel == CALL);
    Some((ret, record))
}

fn reuse<T>(
    name: &'static str,
    position: u32,
    args: &str,
    decode: fn(&Blob) -> Result<T, serde_json::Error>,
    (ret, record): (&PendingWrite, Option<&PendingWrite>),
) -> Result<T, NodeError> {
    let record: Option<CallRecord> = record.and_then(|r| r.value.decode().ok());
    if let Some(record) = &record
        && (record.name != name || record.args != args)
    {
        return Err(FuncError::NonDeterministic {
            task: name,
            position,
            saved_task: record.name.clone(),
            args_differ: record.args != args,
        }
        .into());
    }
    tracing::debug!(task = name, position, "task call returns its saved result");
    decode(&ret.value).map_err(|source| {
        FuncError::SavedResult {
            task: name,
            expected: std::any::type_name::<T>(),
            source,
        }
        .into()
    })
}

/// Stores call `id`'s result as pending writes of the checkpoint the step
/// started from (nothing without a checkpointer).
async fn save(
    ctx: &Context,
    id: &str,
    name: &'static str,
    args: String,
    ret: Blob,
) -> Result<(), NodeError> {
    let step = ctx.scope();
    let (Some(saver), Some(thread_id)) = (&step.saver, step.config.shared_thread_id()) else {
        return Ok(());
    };
    let record = CallRecord {
        name: name.to_owned(),
        args,
    };
    let record = Blob::encode(&record)
        .map_err(|source| FuncError::ResultNotSerializable { task: name, source })?;
    let config = CheckpointConfig {
        thread_id: thread_id.clone(),
        checkpoint_ns: SharedStr::from(&step.graph_ns),
        checkpoint_id: Some(crate::ids::format_uuid(&step.checkpoint).into()),
    };
    saver
        .put_writes(
            &config,
            vec![(CALL.to_owned(), record), (RETURN.to_owned(), ret)],
            id,
        )
        .await
        .map_err(|source| FuncError::Save { task: name, source }.into())
}

/// Stores the answers paused call `id` consumed, so that its re-run gets them
/// again (nothing without a checkpointer).
async fn save_answers(
    ctx: &Context,
    id: &str,
    name: &'static str,
    answers: &[Blob],
) -> Result<(), NodeError> {
    let step = ctx.scope();
    let (Some(saver), Some(thread_id)) = (&step.saver, step.config.shared_thread_id()) else {
        return Ok(());
    };
    let answers = Blob::encode(&answers)
        .map_err(|source| FuncError::ResultNotSerializable { task: name, source })?;
    let config = CheckpointConfig {
        thread_id: thread_id.clone(),
        checkpoint_ns: SharedStr::from(&step.graph_ns),
        checkpoint_id: Some(crate::ids::format_uuid(&step.checkpoint).into()),
    };
    saver
        .put_writes(&config, vec![(RESUME.to_owned(), answers)], id)
        .await
        .map_err(|source| FuncError::Save { task: name, source }.into())
}

/// Pauses the running entrypoint (or task, or node) until it is resumed with
/// `Command::resume(answer)`; returns the answer, as
/// [`Context::interrupt`] does. On resume the entrypoint runs again from its
/// start: the tasks that finished return their saved results, and this call
/// returns the answer. Several calls in one body are answered in order.
///
/// Inside a task call, the interrupt is the call's own (LangGraph's `@task`
/// is a task of its own): its id is the call's, so parallel calls that each
/// ask pause together, and are answered with `Command::resume_map` by id, all
/// at once or one at a time (one `Command::resume` value for several pending
/// interrupts is refused, as in LangGraph). Call this function there, not
/// [`Context::interrupt`] on the entrypoint's context.
pub fn interrupt<Q, A>(question: Q) -> Result<A, NodeError>
where
    Q: Serialize,
    A: DeserializeOwned,
{
    let scope = CURRENT
        .try_with(Scope::clone)
        .map_err(|_| FuncError::InterruptOutsideEntrypoint)?;
    match &scope {
        Scope::Node(ctx) => ctx.interrupt(question),
        Scope::Call(call) => call.ctx.ask_on(Some(&call.pad), call.name, question),
    }
}

/// The [`Context`] of the running entrypoint (the node it runs as), for its
/// tasks: its thread, config, custom stream. `None` outside an entrypoint.
pub fn context() -> Option<Context> {
    CURRENT.try_with(|s| s.ctx().clone()).ok()
}

/// The store the running entrypoint (or graph) was compiled with
/// ([`CompileOptions::store`](crate::CompileOptions::store)), for its tasks:
/// LangGraph's `get_store()`. `None` outside an entrypoint or node, or when
/// no store was given.
pub fn store() -> Option<Arc<dyn Store>> {
    CURRENT
        .try_with(|s| s.ctx().store().ok().cloned())
        .ok()
        .flatten()
}

/// How an entrypoint's `store` parameter is made from the store the
/// entrypoint was compiled with: `&dyn Store` or `&Arc<dyn Store>` (the run
/// fails with [`StoreError::NoStore`](crate::store::StoreError::NoStore)
/// without one), or `Option<&dyn Store>` / `Option<&Arc<dyn Store>>` (`None`
/// without one, as LangGraph's injected `store`).
#[doc(hidden)]
pub trait __StoreArg<'a>: Sized {
    fn __from(store: Option<&'a Arc<dyn Store>>) -> Result<Self, crate::store::StoreError>;
}

impl<'a> __StoreArg<'a> for &'a Arc<dyn Store> {
    fn __from(store: Option<&'a Arc<dyn Store>>) -> Result<Self, crate::store::StoreError> {
        store.ok_or(crate::store::StoreError::NoStore)
    }
}

impl<'a> __StoreArg<'a> for &'a dyn Store {
    fn __from(store: Option<&'a Arc<dyn Store>>) -> Result<Self, crate::store::StoreError> {
        store
            .map(|s| &**s as &dyn Store)
            .ok_or(crate::store::StoreError::NoStore)
    }
}

impl<'a> __StoreArg<'a> for Option<&'a Arc<dyn Store>> {
    fn __from(store: Option<&'a Arc<dyn Store>>) -> Result<Self, crate::store::StoreError> {
        Ok(store)
    }
}

impl<'a> __StoreArg<'a> for Option<&'a dyn Store> {
    fn __from(store: Option<&'a Arc<dyn Store>>) -> Result<Self, crate::store::StoreError> {
        Ok(store.map(|s| &**s as &dyn Store))
    }
}

/// What an entrypoint returns: `value` is the run's output, `save` the value
/// the next run on the same thread gets as `previous` (LangGraph's
/// `entrypoint.final`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Final<T, S> {
    /// The output of this run.
    pub value: T,
    /// What the next run on the thread receives as `previous`.
    pub save: S,
}

/// The future of an entrypoint's body.
pub type EntryFuture<O, S> = Pin<Box<dyn Future<Output = Result<Final<O, S>, NodeError>> + Send>>;

/// A function made an entrypoint by `#[entrypoint]`: its input, output and
/// saved (`previous`) types, and its body.
pub trait EntrypointFn: Send + Sync + 'static {
    /// The input.
    type Input: Clone + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// The output.
    type Output: Clone + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// What a run saves for the next (`previous`); the output unless it returns [`Final`].
    type Save: Clone + Serialize + DeserializeOwned + Send + Sync + 'static;

    /// The entrypoint's name (its node's name in the graph it compiles to).
    fn name(&self) -> &'static str;

    /// Runs the body.
    fn call(
        &self,
        input: Self::Input,
        previous: Option<Self::Save>,
        ctx: Context,
    ) -> EntryFuture<Self::Output, Self::Save>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_ids_differ_by_parent_and_position() {
        let a = call_id("t", 0);
        assert_ne!(a, call_id("t", 1));
        assert_ne!(a, call_id("u", 0));
        assert_eq!(a, call_id("t", 0));
        assert_eq!(a.len(), 36);
    }

    #[test]
    fn a_non_determinism_error_names_both_calls() {
        let e = FuncError::NonDeterministic {
            task: "b",
            position: 1,
            saved_task: "a".into(),
            args_differ: true,
        };
        let text = e.to_string();
        assert!(
            text.contains(
                "call #1 of the re-run entrypoint is `b`, but the saved run's call #1 was `a`"
            ),
            "{text}"
        );
    }
}
