// Every channel kind, managed values, the builder, and the update's Debug output,
// importing nothing but the facade.
use stategraph::prelude::*;
use stategraph::state::FieldVisitor;
use stategraph::state::{FieldSet, ManagedValues};
use stategraph::{State, StateUpdate};

fn concat(mut current: Vec<String>, update: Vec<String>) -> Vec<String> {
    current.extend(update);
    current
}

mod reducers {
    pub fn add(a: u64, b: u64) -> u64 {
        a + b
    }
}

/// A live resource: never checkpointed, so it needs no serde traits.
#[derive(Clone, Default)]
struct Client;

/// A field type without `Debug`, printed as `..` by the update's Debug.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
struct Opaque(u8);

#[derive(State, Clone, Default)]
struct Agent {
    /// The conversation so far.
    #[reducer(concat)]
    log: Vec<String>,
    #[reducer(reducers::add)]
    tokens: u64,
    steps: u32,
    #[channel(last_value)]
    answer: Option<String>,
    #[channel(last_value_after_finish)]
    summary: String,
    #[channel(ephemeral)]
    scratch: String,
    #[channel(ephemeral(guard = false))]
    loose: u8,
    #[channel(topic)]
    events: Vec<String>,
    #[channel(topic(accumulate))]
    history: std::vec::Vec<u32>,
    #[channel(untracked)]
    client: Client,
    #[channel(untracked(guard = false))]
    cache: Vec<u8>,
    #[channel(any_value)]
    latest: i64,
    opaque: Opaque,
    r#type: String,
    remaining: RemainingSteps,
    last: stategraph::IsLastStep,
}

// The update type has the struct's visibility.
pub mod public {
    use stategraph::prelude::*;

    #[derive(State, Clone, Default, Serialize, Deserialize)]
    pub struct Public {
        pub count: u32,
    }
}

// A state may have no channels at all.
#[derive(State, Clone, Default)]
struct OnlyManaged {
    remaining: RemainingSteps,
}

#[derive(State, Clone, Default)]
struct Empty {}

struct Names(Vec<(usize, &'static str)>);

impl FieldVisitor for Names {
    fn visit<T: Serialize + ?Sized>(&mut self, field: usize, name: &'static str, _: &T) {
        self.0.push((field, name));
    }
}

pub fn main() {
    assert_eq!(
        Agent::FIELDS,
        [
            "log", "tokens", "steps", "answer", "summary", "scratch", "loose", "events", "history",
            "client", "cache", "latest", "opaque", "type"
        ]
    );
    assert_eq!(Agent::field_index("type"), Some(13));
    const { assert!(Agent::HAS_MANAGED) };
    const { assert!(!<public::Public as State>::HAS_MANAGED) };
    assert!(<OnlyManaged as State>::FIELDS.is_empty());
    assert!(OnlyManaged::update().is_empty());
    assert!(Empty::update().is_empty());

    let update: AgentUpdate = Agent::update()
        .log(vec!["hi".to_owned()])
        .tokens_overwrite(7)
        .steps(1)
        .events_item("started".to_owned())
        .history(vec![1, 2])
        .client(Client)
        .opaque(Opaque(1))
        .r#type("chat".to_owned());
    assert!(!update.is_empty());
    assert_eq!(
        format!("{update:?}"),
        r#"AgentUpdate { log: ["hi"], tokens: Overwrite(7), steps: 1, events: One("started"), history: [1, 2], client: .., opaque: .., type: "chat" }"#
    );
    assert_eq!(format!("{:?}", Agent::update()), "AgentUpdate");
    assert_eq!(
        format!("{:?}", Agent::update().steps(2)),
        "AgentUpdate { steps: 2 }"
    );
    assert_eq!(
        format!(
            "{:?}",
            Agent::update().tokens(2).events(vec!["a".to_owned()])
        ),
        r#"AgentUpdate { tokens: 2, events: ["a"] }"#
    );

    let mut written = FieldSet::default();
    update.written_fields(&mut written);
    assert_eq!(
        written.iter().collect::<Vec<_>>(),
        [0, 1, 2, 7, 8, 9, 12, 13]
    );

    // Untracked writes are not serialised.
    let mut writes = Names(Vec::new());
    update.visit_writes(&mut writes);
    assert_eq!(
        writes.0,
        [
            (0, "log"),
            (1, "tokens"),
            (2, "steps"),
            (7, "events"),
            (8, "history"),
            (12, "opaque"),
            (13, "type")
        ]
    );

    // One superstep with two updates: reducers fold, LastValue takes its one write.
    let mut state = Agent::default();
    let mut channels = Agent::new_channels();
    assert!(!state.is_available(&channels, 2));
    assert!(
        state.is_available(&channels, 0),
        "a reducer field is always available"
    );
    let mut updates = vec![
        update,
        Agent::update().log(vec!["there".to_owned()]).tokens(3),
    ];
    let mut changed = FieldSet::default();
    state
        .apply_updates(&mut channels, &mut updates, &mut changed)
        .unwrap();
    assert_eq!(state.log, ["hi", "there"]);
    assert_eq!(
        state.tokens, 7,
        "an Overwrite wins over the other writes of its step"
    );
    assert_eq!(state.steps, 1);
    assert_eq!(state.events, ["started"]);
    assert_eq!(state.history, [1, 2]);
    assert!(state.opaque == Opaque(1));
    assert_eq!(state.r#type, "chat");
    assert!(state.is_available(&channels, 2));
    assert!(!state.is_available(&channels, 99));
    assert_eq!(
        changed.iter().collect::<Vec<_>>(),
        [0, 1, 2, 7, 8, 9, 12, 13]
    );
    assert!(
        updates.iter().all(StateUpdate::is_empty),
        "writes are moved out"
    );

    // Two writes to a LastValue field in one step are an error.
    let mut twice = vec![Agent::update().steps(1), Agent::update().steps(2)];
    let err = state
        .apply_updates(&mut channels, &mut twice, &mut FieldSet::default())
        .unwrap_err();
    assert!(err.to_string().contains("At key 'steps'"), "{err}");

    // A new step clears the non-accumulating topic, unless it is skipped.
    let mut skip = FieldSet::default();
    skip.insert(8);
    let mut changed = FieldSet::default();
    state
        .notify_new_step(&mut channels, &skip, &mut changed)
        .unwrap();
    assert!(state.events.is_empty());
    assert_eq!(state.history, [1, 2]);
    assert!(changed.contains(7));

    state.set_managed(&ManagedValues {
        remaining_steps: 4,
        is_last_step: true,
    });
    assert_eq!(*state.remaining, 4);
    assert!(*state.last);

    let mut saved = Names(Vec::new());
    state.visit_saved(&channels, None, &mut saved);
    let names: Vec<_> = saved.0.iter().map(|(_, name)| *name).collect();
    assert!(names.contains(&"log") && names.contains(&"steps"));
    assert!(!names.contains(&"client") && !names.contains(&"answer"));
    let mut only = FieldSet::default();
    only.insert(2);
    let mut saved = Names(Vec::new());
    state.visit_saved(&channels, Some(&only), &mut saved);
    assert_eq!(saved.0, [(2, "steps")]);

    // A LastValueAfterFinish value is visible only after finish().
    let mut after = vec![Agent::update().summary("done".to_owned())];
    state
        .apply_updates(&mut channels, &mut after, &mut FieldSet::default())
        .unwrap();
    assert!(!state.is_available(&channels, 4));
    let mut finished = FieldSet::default();
    state.finish(&mut channels, &mut finished);
    assert!(finished.contains(4) && state.is_available(&channels, 4));

    let _ = (
        &state.answer,
        &state.scratch,
        state.loose,
        &state.cache,
        state.latest,
        &state.client,
    );
    let _: public::PublicUpdate = public::Public::update().count(1);
    let _ = OnlyManaged::default().remaining;
}
