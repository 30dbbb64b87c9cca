// `Self` in a field type means the state, also in the update type the derive writes
// the field type into.
// (`Box` in a `Vec` on purpose: the case is about `Self` inside a type.)
#![allow(clippy::vec_box)]
use stategraph::prelude::*;

fn merge(mut a: Vec<Box<Tree>>, b: Vec<Box<Tree>>) -> Vec<Box<Tree>> {
    a.extend(b);
    a
}

#[derive(State, Clone, Default, Debug, Serialize, Deserialize)]
struct Tree {
    label: String,
    #[reducer(merge)]
    children: Vec<Box<Self>>,
    #[channel(topic)]
    siblings: Vec<Self>,
}

pub fn main() {
    let leaf = Tree {
        label: "leaf".to_owned(),
        ..Tree::default()
    };
    let update = Tree::update()
        .label("root".to_owned())
        .children(vec![Box::new(leaf.clone())])
        .siblings_item(leaf);
    assert!(format!("{update:?}").starts_with(r#"TreeUpdate { label: "root", children: [Tree {"#));
}
