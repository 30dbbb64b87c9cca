//! Checkpoint cost per superstep: a 100-field state where one field changes per
//! step, with the in-memory saver and with SQLite (durability sync). The cost must
//! stay O(changed channels), not O(state size).

use super::{run_config, runtime};
use crate::harness::{expect, Workload};
use stategraph::{Command, Durability, Goto, StateGraph, START};
use stategraph_bench::{with_field, Wide100};

const STEPS: usize = 100;

#[derive(Goto, Clone, Copy, Debug)]
enum Next {
    Touch,
    #[goto(end)]
    Done,
}

#[stategraph::node]
fn touch(s: &Wide100) -> Command<Next> {
    let next = if s.step + 1 == STEPS {
        Next::Done
    } else {
        Next::Touch
    };
    let value = format!("{:0>1024}", s.step);
    Command::goto(next).update(with_field(
        Wide100::update().step(s.step + 1),
        s.step % 100,
        value,
    ))
}

pub fn build(sqlite: bool) -> Workload {
    let rt = runtime();
    let dir = super::scratch_dir("checkpoint_cost");
    let memory = std::sync::Arc::new(stategraph::checkpoint::InMemorySaver::new());
    let graph = rt.block_on(async {
        let builder = StateGraph::<Wide100>::new()
            .add_node(touch)
            .add_edge(START, touch);
        if sqlite {
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("bench dir: {e}"));
            let saver = stategraph::sqlite::SqliteSaver::open(dir.join("checkpoints.db"))
                .await
                .unwrap_or_else(|e| panic!("sqlite: {e}"));
            builder.compile_with(saver)
        } else {
            builder.compile_with(std::sync::Arc::clone(&memory)
                as std::sync::Arc<dyn stategraph::checkpoint::Checkpointer>)
        }
        .unwrap_or_else(|e| panic!("checkpoint_cost graph: {e}"))
    });
    // Every field starts written, so each later step changes exactly one of 100.
    let mut input = Wide100::update();
    for i in 0..100 {
        input = with_field(input, i, "x".repeat(1024));
    }
    let rt = std::sync::Arc::new(rt);
    let (check_rt, check_graph) = (std::sync::Arc::clone(&rt), graph.clone());
    let workload = Workload::new(
        move || {
            let config = run_config().with_durability(Durability::Sync);
            let out = rt
                .block_on(graph.invoke(input.clone(), &config))
                .map_err(|e| e.to_string())?;
            Ok((out.step, config))
        },
        move |(step, config)| {
            expect(step == STEPS, || format!("step={step}"))?;
            let history = check_rt
                .block_on(check_graph.get_state_history(&config, &Default::default()))
                .map_err(|e| e.to_string())?;
            expect(history.len() == STEPS + 2, || {
                format!("{} checkpoints", history.len())
            })
        },
    );
    if sqlite {
        workload.with_stored(crate::harness::sqlite_stored(dir.join("checkpoints.db")))
    } else {
        workload.with_stored(crate::harness::memory_stored(memory))
    }
}
