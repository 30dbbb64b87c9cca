//! Checkpoint cost per superstep: a 100-field state where one field changes per
//! step, with the in-memory saver and with SQLite (durability sync). The cost must
//! stay O(changed channels), not O(state size).

use super::{run_config, runtime};
use crate::harness::{expect, Workload};
use serde::{Deserialize, Serialize};
use stategraph::{Command, Durability, Goto, State, StateGraph, START};

const STEPS: usize = 100;

/// 100 fields of 1 KiB each.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Wide100 {
    f0: String,
    f1: String,
    f2: String,
    f3: String,
    f4: String,
    f5: String,
    f6: String,
    f7: String,
    f8: String,
    f9: String,
    f10: String,
    f11: String,
    f12: String,
    f13: String,
    f14: String,
    f15: String,
    f16: String,
    f17: String,
    f18: String,
    f19: String,
    f20: String,
    f21: String,
    f22: String,
    f23: String,
    f24: String,
    f25: String,
    f26: String,
    f27: String,
    f28: String,
    f29: String,
    f30: String,
    f31: String,
    f32: String,
    f33: String,
    f34: String,
    f35: String,
    f36: String,
    f37: String,
    f38: String,
    f39: String,
    f40: String,
    f41: String,
    f42: String,
    f43: String,
    f44: String,
    f45: String,
    f46: String,
    f47: String,
    f48: String,
    f49: String,
    f50: String,
    f51: String,
    f52: String,
    f53: String,
    f54: String,
    f55: String,
    f56: String,
    f57: String,
    f58: String,
    f59: String,
    f60: String,
    f61: String,
    f62: String,
    f63: String,
    f64: String,
    f65: String,
    f66: String,
    f67: String,
    f68: String,
    f69: String,
    f70: String,
    f71: String,
    f72: String,
    f73: String,
    f74: String,
    f75: String,
    f76: String,
    f77: String,
    f78: String,
    f79: String,
    f80: String,
    f81: String,
    f82: String,
    f83: String,
    f84: String,
    f85: String,
    f86: String,
    f87: String,
    f88: String,
    f89: String,
    f90: String,
    f91: String,
    f92: String,
    f93: String,
    f94: String,
    f95: String,
    f96: String,
    f97: String,
    f98: String,
    f99: String,
    step: usize,
}

#[derive(Goto, Clone, Copy, Debug)]
enum Next {
    Touch,
    #[goto(end)]
    Done,
}

fn with_field(s: Wide100Update, i: usize, v: String) -> Wide100Update {
    match i {
        0 => s.f0(v),
        1 => s.f1(v),
        2 => s.f2(v),
        3 => s.f3(v),
        4 => s.f4(v),
        5 => s.f5(v),
        6 => s.f6(v),
        7 => s.f7(v),
        8 => s.f8(v),
        9 => s.f9(v),
        10 => s.f10(v),
        11 => s.f11(v),
        12 => s.f12(v),
        13 => s.f13(v),
        14 => s.f14(v),
        15 => s.f15(v),
        16 => s.f16(v),
        17 => s.f17(v),
        18 => s.f18(v),
        19 => s.f19(v),
        20 => s.f20(v),
        21 => s.f21(v),
        22 => s.f22(v),
        23 => s.f23(v),
        24 => s.f24(v),
        25 => s.f25(v),
        26 => s.f26(v),
        27 => s.f27(v),
        28 => s.f28(v),
        29 => s.f29(v),
        30 => s.f30(v),
        31 => s.f31(v),
        32 => s.f32(v),
        33 => s.f33(v),
        34 => s.f34(v),
        35 => s.f35(v),
        36 => s.f36(v),
        37 => s.f37(v),
        38 => s.f38(v),
        39 => s.f39(v),
        40 => s.f40(v),
        41 => s.f41(v),
        42 => s.f42(v),
        43 => s.f43(v),
        44 => s.f44(v),
        45 => s.f45(v),
        46 => s.f46(v),
        47 => s.f47(v),
        48 => s.f48(v),
        49 => s.f49(v),
        50 => s.f50(v),
        51 => s.f51(v),
        52 => s.f52(v),
        53 => s.f53(v),
        54 => s.f54(v),
        55 => s.f55(v),
        56 => s.f56(v),
        57 => s.f57(v),
        58 => s.f58(v),
        59 => s.f59(v),
        60 => s.f60(v),
        61 => s.f61(v),
        62 => s.f62(v),
        63 => s.f63(v),
        64 => s.f64(v),
        65 => s.f65(v),
        66 => s.f66(v),
        67 => s.f67(v),
        68 => s.f68(v),
        69 => s.f69(v),
        70 => s.f70(v),
        71 => s.f71(v),
        72 => s.f72(v),
        73 => s.f73(v),
        74 => s.f74(v),
        75 => s.f75(v),
        76 => s.f76(v),
        77 => s.f77(v),
        78 => s.f78(v),
        79 => s.f79(v),
        80 => s.f80(v),
        81 => s.f81(v),
        82 => s.f82(v),
        83 => s.f83(v),
        84 => s.f84(v),
        85 => s.f85(v),
        86 => s.f86(v),
        87 => s.f87(v),
        88 => s.f88(v),
        89 => s.f89(v),
        90 => s.f90(v),
        91 => s.f91(v),
        92 => s.f92(v),
        93 => s.f93(v),
        94 => s.f94(v),
        95 => s.f95(v),
        96 => s.f96(v),
        97 => s.f97(v),
        98 => s.f98(v),
        99 => s.f99(v),
        _ => s,
    }
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
    let dir = std::env::temp_dir().join(format!("stategraph-bench-{}", std::process::id()));
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
            builder.compile_with(stategraph::checkpoint::InMemorySaver::new())
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
    Workload::new(
        move || {
            let config = run_config().durability(Durability::Sync);
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
    )
}
