//! Property tests of reducers, on proptest: the laws the engine relies on and
//! the ones users assume.
//!
//! ```
//! use stategraph::testing::{laws, reducer_laws};
//!
//! fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
//!     a.extend(b);
//!     a
//! }
//!
//! fn max(a: u32, b: u32) -> u32 {
//!     a.max(b)
//! }
//!
//! // A list append: associative, `vec![]` an identity, and `a` then `b`.
//! laws::list_append(concat).check();
//!
//! // Any reducer, with what it claims.
//! reducer_laws(max).default_is_identity().commutative().check();
//! ```
//!
//! | law | what | why it matters |
//! |---|---|---|
//! | `associativity` | `r(r(a, b), c) == r(a, r(b, c))` | a superstep folds its tasks' writes in task order onto the current value; an associative reducer gives the same value however the writes are grouped (several writes of one task, writes spread over steps, a subgraph's writes folded first) |
//! | `one step = one by one` | the writes `[a, b]` in one step give what `[a]` then `[b]` in two steps give, through the field's real channel | a graph may be split into more steps (a node added in between) without changing the value |
//! | `overwrite` | `[a, Overwrite(o), b]` in one step gives `o`; a later step folds onto `o`; two `Overwrite`s in one step are an error | `Overwrite` replaces whatever the reducer would make |
//! | `default is identity` (claimed with [`default_is_identity`](ReducerLaws::default_is_identity)) | `r(T::default(), a) == a == r(a, T::default())` | the field starts at its default: the first write is the value, an empty write changes nothing |
//! | `commutativity` (claimed with [`commutative`](ReducerLaws::commutative)) | `r(a, b) == r(b, a)` | parallel tasks' writes give the same value whatever their task order |
//! | a model ([`model`](ReducerLaws::model)) | `r(a, b) == model(a, b)` | the reducer does what its name says |
//!
//! A fallible reducer (`fn(T, T) -> Result<T, E>`) passes a law when both sides
//! fail or both give equal values. A broken law panics with its name and the
//! smallest counterexample proptest found (shrunk from the first one).

use graph_core::__private::Reducer;
use graph_core::channels::{BinaryOperatorAggregate, ChannelCell, ReducerError, ReducerWrite};
use proptest::arbitrary::{any, Arbitrary};
use proptest::strategy::{BoxedStrategy, Strategy};
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use serde::{de::DeserializeOwned, Serialize};
use std::any::Any;
use std::cell::RefCell;
use std::fmt::Debug;
use std::rc::Rc;

/// What a reducer under test must be: what a field of a `#[derive(State)]`
/// struct holds, comparable and printable.
pub trait LawValue:
    Clone + Debug + PartialEq + Default + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

impl<T> LawValue for T where
    T: Clone + Debug + PartialEq + Default + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

type Reduce<T> = Rc<dyn Fn(T, T) -> Result<T, ReducerError>>;
type Model<T> = Box<dyn Fn(&T, &T) -> T>;

/// The laws of one reducer, to check ([`reducer_laws`], [`reducer_laws_with`]).
pub struct ReducerLaws<T> {
    reduce: Reduce<T>,
    values: BoxedStrategy<T>,
    identity: bool,
    commutative: bool,
    models: Vec<(&'static str, Model<T>)>,
    cases: u32,
}

impl<T> Debug for ReducerLaws<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReducerLaws")
            .field("type", &std::any::type_name::<T>())
            .field("identity", &self.identity)
            .field("commutative", &self.commutative)
            .field(
                "models",
                &self.models.iter().map(|m| m.0).collect::<Vec<_>>(),
            )
            .field("cases", &self.cases)
            .finish()
    }
}

/// The laws of `reducer` (`fn(T, T) -> T` or `fn(T, T) -> Result<T, E>`, as
/// `#[reducer(..)]` takes it), on values from `T`'s [`Arbitrary`] strategy.
pub fn reducer_laws<T, M>(reducer: impl Reducer<T, M> + 'static) -> ReducerLaws<T>
where
    T: LawValue + Arbitrary,
{
    reducer_laws_with(reducer, any::<T>())
}

/// The laws of `reducer` on values from `values` (for a `T` without
/// [`Arbitrary`], or to aim at the values that matter: messages that share ids).
pub fn reducer_laws_with<T, M>(
    reducer: impl Reducer<T, M> + 'static,
    values: impl Strategy<Value = T> + 'static,
) -> ReducerLaws<T>
where
    T: LawValue,
{
    ReducerLaws {
        reduce: Rc::new(move |a, b| reducer.reduce(a, b)),
        values: values.boxed(),
        identity: false,
        commutative: false,
        models: Vec::new(),
        cases: 256,
    }
}

/// A broken law: its name, the smallest counterexample and what each side gave.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("reducer law `{law}` does not hold for {type_name}\n{detail}")]
#[non_exhaustive]
pub struct LawViolation {
    /// The law.
    pub law: String,
    /// The type the reducer folds.
    pub type_name: &'static str,
    /// The values it broke for (shrunk) and what each side of the law gave.
    pub detail: String,
}

impl<T: LawValue> ReducerLaws<T> {
    /// Claims `T::default()` is an identity: `r(default, a) == a == r(a, default)`.
    pub fn default_is_identity(mut self) -> Self {
        self.identity = true;
        self
    }

    /// Claims the reducer is commutative: `r(a, b) == r(b, a)`.
    pub fn commutative(mut self) -> Self {
        self.commutative = true;
        self
    }

    /// Adds the law `name`: `r(a, b) == model(a, b)`, with `model` a plainly
    /// correct (maybe slow) version of the reducer.
    pub fn model(mut self, name: &'static str, model: impl Fn(&T, &T) -> T + 'static) -> Self {
        self.models.push((name, Box::new(model)));
        self
    }

    /// How many random cases each check tries (256 by default).
    pub fn cases(mut self, cases: u32) -> Self {
        self.cases = cases;
        self
    }

    /// Checks every law; panics with the broken law's name and the smallest
    /// counterexample.
    #[track_caller]
    pub fn check(&self) {
        if let Err(violation) = self.try_check() {
            panic!("{violation}");
        }
    }

    /// Checks every law; the first broken one, shrunk, is the error.
    pub fn try_check(&self) -> Result<(), LawViolation> {
        let mut runner = TestRunner::new(Config {
            cases: self.cases,
            // A user's crate gets no proptest-regressions files from us.
            failure_persistence: None,
            ..Config::default()
        });
        let values = (
            self.values.clone(),
            self.values.clone(),
            self.values.clone(),
            self.values.clone(),
        );
        let _installed = Installed::new(Rc::clone(&self.reduce));
        let result = runner.run(&values, |(a, b, c, o)| {
            self.laws(a, b, c, o)
                .map_err(|(law, detail)| TestCaseError::fail(format!("{law}\n{detail}")))
        });
        match result {
            Ok(()) => Ok(()),
            Err(TestError::Fail(reason, (a, b, c, o))) => {
                let reason = reason.message().to_owned();
                let (law, sides) = reason.split_once('\n').unwrap_or((&reason, ""));
                Err(LawViolation {
                    law: law.to_owned(),
                    type_name: std::any::type_name::<T>(),
                    detail: format!(
                        "smallest counterexample:\n  a = {a:?}\n  b = {b:?}\n  c = {c:?}\n  \
                         o = {o:?}\n{sides}"
                    ),
                })
            }
            Err(TestError::Abort(reason)) => Err(LawViolation {
                law: "(none: the check stopped)".to_owned(),
                type_name: std::any::type_name::<T>(),
                detail: reason.message().to_owned(),
            }),
        }
    }

    /// Every law for one case; the first broken one's name and sides.
    fn laws(&self, a: T, b: T, c: T, o: T) -> Result<(), (&'static str, String)> {
        let r = |x: &T, y: &T| (self.reduce)(x.clone(), y.clone()).map_err(|e| e.to_string());
        let then = |x: Result<T, String>, y: &T| x.and_then(|x| r(&x, y));
        let after = |x: &T, y: Result<T, String>| y.and_then(|y| r(x, &y));
        same(
            "associativity",
            "r(r(a, b), c)",
            &then(r(&a, &b), &c),
            "r(a, r(b, c))",
            &after(&a, r(&b, &c)),
        )?;
        let one_step = fold(
            &c,
            vec![
                ReducerWrite::Value(a.clone()),
                ReducerWrite::Value(b.clone()),
            ],
        );
        let one_by_one = fold(&c, vec![ReducerWrite::Value(a.clone())])
            .and_then(|x| fold(&x, vec![ReducerWrite::Value(b.clone())]));
        same(
            "one step = one by one",
            "[a, b] folded onto c in one step",
            &one_step,
            "[a] then [b] folded onto c",
            &one_by_one,
        )?;
        let writes = vec![
            ReducerWrite::Value(a.clone()),
            ReducerWrite::Overwrite(o.clone()),
            ReducerWrite::Value(b.clone()),
        ];
        same(
            "overwrite",
            "[a, Overwrite(o), b] onto c",
            &fold(&c, writes),
            "o",
            &Ok(o.clone()),
        )?;
        same(
            "overwrite",
            "[Overwrite(o)] then [b] onto c",
            &fold(&c, vec![ReducerWrite::Overwrite(o.clone())])
                .and_then(|x| fold(&x, vec![ReducerWrite::Value(b.clone())])),
            "r(o, b)",
            &r(&o, &b),
        )?;
        let two = fold(
            &c,
            vec![
                ReducerWrite::Overwrite(o.clone()),
                ReducerWrite::Overwrite(a.clone()),
            ],
        );
        if let Ok(value) = two {
            return Err((
                "overwrite",
                format!("  [Overwrite(o), Overwrite(a)] in one step gave {value:?}, not an error"),
            ));
        }
        if self.identity {
            let zero = T::default();
            same(
                "default is identity",
                "r(default, a)",
                &r(&zero, &a),
                "a",
                &Ok(a.clone()),
            )?;
            same(
                "default is identity",
                "r(a, default)",
                &r(&a, &zero),
                "a",
                &Ok(a.clone()),
            )?;
        }
        if self.commutative {
            same(
                "commutativity",
                "r(a, b)",
                &r(&a, &b),
                "r(b, a)",
                &r(&b, &a),
            )?;
        }
        for (name, model) in &self.models {
            same(
                name,
                "r(a, b)",
                &r(&a, &b),
                "model(a, b)",
                &Ok(model(&a, &b)),
            )?;
        }
        Ok(())
    }
}

/// Both sides fail, or both give equal values.
fn same<T: Debug + PartialEq>(
    law: &'static str,
    left_name: &str,
    left: &Result<T, String>,
    right_name: &str,
    right: &Result<T, String>,
) -> Result<(), (&'static str, String)> {
    match (left, right) {
        (Ok(l), Ok(r)) if l == r => Ok(()),
        (Err(_), Err(_)) => Ok(()),
        _ => Err((
            law,
            format!("  {left_name} = {left:?}\n  {right_name} = {right:?}"),
        )),
    }
}

/// `writes` applied in one step, through the field's real channel, onto `start`
/// (itself reached by one overwrite).
fn fold<T: LawValue>(start: &T, writes: Vec<ReducerWrite<T>>) -> Result<T, String> {
    let mut cell = ChannelCell::new(BinaryOperatorAggregate::fallible("field", installed::<T>));
    cell.update([ReducerWrite::Overwrite(start.clone())])
        .map_err(|e| e.to_string())?;
    cell.update(writes).map_err(|e| e.to_string())?;
    let (_, value) = cell.into_parts();
    Ok(value)
}

thread_local! {
    /// The reducer under test, for the channel's `fn` pointer ([`installed`]):
    /// the channel takes a plain `fn`, the reducer may be any `Fn`.
    static REDUCER: RefCell<Option<Rc<dyn Any>>> = const { RefCell::new(None) };
}

/// The reducer [`Installed`] on this thread.
fn installed<T: 'static>(a: T, b: T) -> Result<T, ReducerError> {
    let reduce = REDUCER.with(|r| r.borrow().clone());
    match reduce.and_then(|r| r.downcast::<Reduce<T>>().ok()) {
        Some(reduce) => reduce(a, b),
        None => Err("no reducer is installed on this thread (a bug in the law checks)".into()),
    }
}

/// Installs a reducer on this thread for the duration of a check.
struct Installed;

impl Installed {
    fn new<T: 'static>(reduce: Reduce<T>) -> Self {
        let any: Rc<dyn Any> = Rc::new(reduce);
        REDUCER.with(|r| *r.borrow_mut() = Some(any));
        Installed
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        REDUCER.with(|r| *r.borrow_mut() = None);
    }
}

/// The laws of a list-append reducer (`a` then `b`): associative, the empty list
/// an identity, and `r(a, b) == a ++ b`.
pub fn list_append<E, M>(reducer: impl Reducer<Vec<E>, M> + 'static) -> ReducerLaws<Vec<E>>
where
    Vec<E>: LawValue,
    E: Arbitrary + Clone,
{
    reducer_laws(reducer)
        .default_is_identity()
        .model("append", |a: &Vec<E>, b: &Vec<E>| {
            a.iter().chain(b).cloned().collect()
        })
}

/// The laws of a map-union reducer (`HashMap`, `BTreeMap`, ...; on a key in
/// both maps, `b`'s value wins): associative, the empty map an identity, and
/// `r(a, b) ==` the entries of `a` then `b` collected.
pub fn map_union<K, V, Map, M>(reducer: impl Reducer<Map, M> + 'static) -> ReducerLaws<Map>
where
    Map: LawValue + Arbitrary + FromIterator<(K, V)>,
    for<'a> &'a Map: IntoIterator<Item = (&'a K, &'a V)>,
    K: Clone,
    V: Clone,
{
    reducer_laws(reducer)
        .default_is_identity()
        .model("union, b wins", |a: &Map, b: &Map| {
            a.into_iter()
                .chain(b)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
}

/// The laws of [`add_messages`](crate::agents::add_messages): associative, and
/// the empty list an identity. The lists hold messages of a few ids, so that
/// writes replace messages by id; each list has distinct ids, as a state's
/// messages do (a write with one id twice keeps its last message: `r([], a)` is
/// then not `a`, in LangGraph as here).
#[cfg(feature = "agents")]
pub fn add_messages() -> ReducerLaws<Vec<crate::agents::Message>> {
    use crate::agents::Message;
    let message = (0..4u8, any::<bool>(), 0..3u8).prop_map(|(id, human, text)| {
        let content = format!("text {text}");
        let m = if human {
            Message::human(content)
        } else {
            Message::ai(content)
        };
        m.with_id(format!("m{id}"))
    });
    let distinct = proptest::collection::vec(message, 0..4).prop_map(|mut list| {
        let mut seen = std::collections::HashSet::new();
        list.retain(|m| seen.insert(m.id().map(str::to_owned)));
        list
    });
    reducer_laws_with(crate::agents::add_messages, distinct).default_is_identity()
}
