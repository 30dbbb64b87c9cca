//! Naming nodes in edges: [`IntoNodeName`] and [`EdgeSources`].

use crate::node::{ByFn, ByName, ByRef, ByValue, NodeMarker, NodeSpec};
use std::borrow::Cow;

/// Something that names a node in an edge: a `#[node]` fn, a node value, a `&str`,
/// `START` / `END`. `M` is inferred.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not name a node",
    label = "expected a `#[node]` fn, a node name (`&str`), START or END"
)]
pub trait IntoNodeName<M> {
    /// The node's name.
    fn node_name(&self) -> Cow<'static, str>;
}

impl<N: NodeSpec> IntoNodeName<ByValue> for N {
    fn node_name(&self) -> Cow<'static, str> {
        self.name()
    }
}

impl<F, T> IntoNodeName<ByFn<T>> for F
where
    F: Fn(NodeMarker) -> T,
    T: NodeSpec,
{
    fn node_name(&self) -> Cow<'static, str> {
        self(NodeMarker(())).name()
    }
}

impl<N: NodeSpec> IntoNodeName<ByRef> for &N {
    fn node_name(&self) -> Cow<'static, str> {
        self.name()
    }
}

impl IntoNodeName<ByName> for &str {
    fn node_name(&self) -> Cow<'static, str> {
        Cow::Owned((*self).to_owned())
    }
}

impl IntoNodeName<ByName> for String {
    fn node_name(&self) -> Cow<'static, str> {
        Cow::Owned(self.clone())
    }
}

/// Marks a single edge source.
pub struct One<M>(std::marker::PhantomData<fn() -> M>);
/// Marks a list of same-kind edge sources (array or `Vec`).
pub struct Many<M>(std::marker::PhantomData<fn() -> M>);

/// The sources of an edge: one node, or a tuple / array / `Vec` of them for a join.
pub trait EdgeSources<M> {
    /// The source names, in order.
    fn source_names(&self) -> Vec<String>;
}

impl<M, T: IntoNodeName<M>> EdgeSources<One<M>> for T {
    fn source_names(&self) -> Vec<String> {
        vec![self.node_name().into_owned()]
    }
}

impl<M, T: IntoNodeName<M>, const N: usize> EdgeSources<Many<M>> for [T; N] {
    fn source_names(&self) -> Vec<String> {
        self.iter().map(|s| s.node_name().into_owned()).collect()
    }
}

impl<M, T: IntoNodeName<M>> EdgeSources<Many<M>> for Vec<T> {
    fn source_names(&self) -> Vec<String> {
        self.iter().map(|s| s.node_name().into_owned()).collect()
    }
}

macro_rules! tuple_sources {
    ($($t:ident $m:ident),+) => {
        impl<$($t: IntoNodeName<$m>, $m),+> EdgeSources<($($m,)+)> for ($($t,)+) {
            #[allow(non_snake_case)]
            fn source_names(&self) -> Vec<String> {
                let ($($t,)+) = self;
                vec![$($t.node_name().into_owned()),+]
            }
        }
    };
}

tuple_sources!(A MA, B MB);
tuple_sources!(A MA, B MB, C MC);
tuple_sources!(A MA, B MB, C MC, D MD);
tuple_sources!(A MA, B MB, C MC, D MD, E ME);
tuple_sources!(A MA, B MB, C MC, D MD, E ME, F MF);
tuple_sources!(A MA, B MB, C MC, D MD, E ME, F MF, G MG);
tuple_sources!(A MA, B MB, C MC, D MD, E ME, F MF, G MG, H MH);
