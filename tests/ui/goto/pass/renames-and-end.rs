use stategraph::prelude::*;
use stategraph::{Destination, GotoTarget, Targets};

#[derive(Goto, Clone, Copy, Debug)]
enum Route {
    Tools,
    ToolCall,
    HTTPRequest,
    #[goto(name = "call-model")]
    Model,
    #[goto(end)]
    Done,
    // A second way to END is listed once in the targets.
    #[goto(end)]
    GiveUp,
    // So is a second way to the same node.
    #[goto(name = "tools")]
    Retry,
}

// An empty goto enum routes nowhere.
#[derive(Goto, Clone, Copy, Debug)]
enum Never {}

pub mod public {
    use stategraph::prelude::*;

    #[derive(Goto, Clone, Copy, Debug)]
    pub enum Next {
        Again,
        #[goto(end)]
        Stop,
    }
}

pub fn main() {
    assert_eq!(Route::Tools.destination(), Destination::Node("tools"));
    assert_eq!(
        Route::ToolCall.destination(),
        Destination::Node("tool_call")
    );
    assert_eq!(
        Route::HTTPRequest.destination(),
        Destination::Node("http_request")
    );
    assert_eq!(Route::Model.destination(), Destination::Node("call-model"));
    assert_eq!(Route::Done.destination(), Destination::End);
    assert_eq!(Route::GiveUp.destination(), Destination::End);
    assert_eq!(Route::Retry.destination(), Destination::Node("tools"));
    assert_eq!(
        Route::targets(),
        Targets::Declared(&[
            Destination::Node("tools"),
            Destination::Node("tool_call"),
            Destination::Node("http_request"),
            Destination::Node("call-model"),
            Destination::End,
        ])
    );
    assert_eq!(Never::targets(), Targets::Declared(&[]));
    assert_eq!(
        public::Next::Again.destination(),
        Destination::Node("again")
    );
    assert_eq!(public::Next::Stop.destination(), Destination::End);
}
