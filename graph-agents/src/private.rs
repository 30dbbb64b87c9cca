//! Support code for the expansion of `#[tool]`. Not public API.

pub use schemars;
pub use serde;

/// JSON, for the arguments of the stand-in `#[tool]` emits after an error.
pub type JsonValue = serde_json::Value;

pub use crate::tool::ToolMarker;

/// A tool fn's result as the `Result` the `Tool` trait wants: a plain value never
/// fails, a `Result` keeps its error.
#[diagnostic::on_unimplemented(
    message = "a #[tool] fn cannot return `{Self}`",
    label = "not a tool result",
    note = "return `String`, a number, `bool`, `serde_json::Value`, `Vec<T>`, `Option<T>`, or `Result<T, E>` where `T: Serialize` and `E: Display`"
)]
pub trait IntoToolResult {
    /// The success value.
    type Output: serde::Serialize + Send + 'static;
    /// The error.
    type Error: std::fmt::Display + Send + 'static;
    /// Converts.
    fn into_tool_result(self) -> Result<Self::Output, Self::Error>;
}

impl<T, E> IntoToolResult for Result<T, E>
where
    T: serde::Serialize + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    type Output = T;
    type Error = E;

    fn into_tool_result(self) -> Result<T, E> {
        self
    }
}

macro_rules! infallible {
    ($($t:ty),*) => {$(
        impl IntoToolResult for $t {
            type Output = $t;
            type Error = std::convert::Infallible;

            fn into_tool_result(self) -> Result<$t, std::convert::Infallible> {
                Ok(self)
            }
        }
    )*};
}

infallible!(
    String,
    &'static str,
    bool,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    f32,
    f64,
    serde_json::Value
);

impl<T: serde::Serialize + Send + 'static> IntoToolResult for Vec<T> {
    type Output = Vec<T>;
    type Error = std::convert::Infallible;

    fn into_tool_result(self) -> Result<Vec<T>, std::convert::Infallible> {
        Ok(self)
    }
}

impl<T: serde::Serialize + Send + 'static> IntoToolResult for Option<T> {
    type Output = Option<T>;
    type Error = std::convert::Infallible;

    fn into_tool_result(self) -> Result<Option<T>, std::convert::Infallible> {
        Ok(self)
    }
}

/// Makes the marker value a `#[tool]` fn expands to.
pub const fn marker() -> ToolMarker {
    ToolMarker(())
}
