//! An insertion-ordered table of mock objects, indexed by what CRI clients look them up and
//! filter by: full id, id prefix, state, every label pair, and (for containers) the sandbox they
//! belong to. A lookup or filtered list walks the smallest matching index, so it costs what it
//! answers rather than what the mock holds, and still answers oldest first.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;

/// An index whose set holds at least 1/SCAN_RATIO of the table is not worth walking.
const SCAN_RATIO: usize = 8;

/// Where an object sits in its table: its insertion number. Lists answer in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Key(u64);

/// What a table indexes an object by.
pub(crate) trait Indexed {
    /// The full id, unique in the table and never changed once inserted.
    fn id(&self) -> &str;
    /// The CRI state, as its proto number.
    fn state(&self) -> i32;
    /// The CRI labels.
    fn labels(&self) -> &BTreeMap<String, String>;
    /// The id of the object this one belongs to (a container's sandbox); never changed.
    fn group(&self) -> Option<&str>;
}

/// The outcome of looking an id up among several ids.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Lookup<T> {
    /// The id, or the one id it prefixes.
    Found(T),
    /// Nothing matches.
    Missing,
    /// The prefix matches more than one id.
    Ambiguous,
}

/// Resolves `given` among the keys of `ids`: an exact match wins, else a prefix matching exactly
/// one id. Touches at most the exact entry and two prefixed ones.
pub(crate) fn lookup<'a, V>(ids: &'a BTreeMap<String, V>, given: &str) -> Lookup<(&'a str, &'a V)> {
    if given.is_empty() {
        return Lookup::Missing;
    }
    if let Some((id, value)) = ids.get_key_value(given) {
        return Lookup::Found((id.as_str(), value));
    }
    let mut matches = prefixed(ids, given);
    match (matches.next(), matches.next()) {
        (Some(only), None) => Lookup::Found(only),
        (None, _) => Lookup::Missing,
        (Some(_), Some(_)) => Lookup::Ambiguous,
    }
}

/// The entries of `ids` whose id starts with `prefix`, in id order.
pub(crate) fn prefixed<'a, 'p, V>(
    ids: &'a BTreeMap<String, V>,
    prefix: &'p str,
) -> impl Iterator<Item = (&'a str, &'a V)> + use<'a, 'p, V> {
    ids.range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
        .map(|(id, value)| (id.as_str(), value))
        .take_while(move |(id, _)| id.starts_with(prefix))
}

/// Which objects a filtered list wants; `None` (or an empty selector) matches everything.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Filter<'a> {
    /// Exactly this full id.
    pub(crate) id: Option<&'a str>,
    /// Exactly this group (a container's sandbox id).
    pub(crate) group: Option<&'a str>,
    /// Exactly this state.
    pub(crate) state: Option<i32>,
    /// Every one of these label pairs.
    pub(crate) labels: Option<&'a BTreeMap<String, String>>,
}

impl Filter<'_> {
    fn matches(&self, object: &impl Indexed) -> bool {
        self.id.is_none_or(|id| object.id() == id)
            && self.group.is_none_or(|group| object.group() == Some(group))
            && self.state.is_none_or(|state| object.state() == state)
            && self.labels.is_none_or(|selector| {
                let labels = object.labels();
                selector.iter().all(|(k, v)| labels.get(k) == Some(v))
            })
    }
}

/// Objects in insertion order with their indexes.
#[derive(Debug)]
pub(crate) struct Table<T> {
    objects: BTreeMap<Key, T>,
    ids: BTreeMap<String, Key>,
    facets: Facets,
    /// Group id -> members; ordered so group ids resolve by prefix too.
    by_group: BTreeMap<String, BTreeSet<Key>>,
    next: u64,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Self {
            objects: BTreeMap::new(),
            ids: BTreeMap::new(),
            facets: Facets::default(),
            by_group: BTreeMap::new(),
            next: 0,
        }
    }
}

/// Adds `key` to the set `map[name]`.
fn add<K: std::hash::Hash + Eq>(map: &mut HashMap<K, BTreeSet<Key>>, name: K, key: Key) {
    map.entry(name).or_default().insert(key);
}

/// Removes `key` from the set `map[name]`, dropping the set when it empties.
fn drop_key<K, Q>(map: &mut HashMap<K, BTreeSet<Key>>, name: &Q, key: Key)
where
    K: std::borrow::Borrow<Q> + std::hash::Hash + Eq,
    Q: std::hash::Hash + Eq + ?Sized,
{
    if let Some(set) = map.get_mut(name) {
        set.remove(&key);
        if set.is_empty() {
            map.remove(name);
        }
    }
}

/// The indexes of what may change about an object: its state and labels.
#[derive(Debug, Default)]
struct Facets {
    by_state: HashMap<i32, BTreeSet<Key>>,
    /// Label key -> label value -> holders.
    by_label: HashMap<String, HashMap<String, BTreeSet<Key>>>,
}

impl Facets {
    /// Indexes `key` under a state and labels.
    fn index(&mut self, state: i32, labels: &BTreeMap<String, String>, key: Key) {
        add(&mut self.by_state, state, key);
        for (k, v) in labels {
            let values = match self.by_label.get_mut(k.as_str()) {
                Some(values) => values,
                None => self.by_label.entry(k.clone()).or_default(),
            };
            match values.get_mut(v.as_str()) {
                Some(set) => {
                    set.insert(key);
                }
                None => add(values, v.clone(), key),
            }
        }
    }

    /// Forgets `key` under a state and labels.
    fn unindex(&mut self, state: i32, labels: &BTreeMap<String, String>, key: Key) {
        drop_key(&mut self.by_state, &state, key);
        for (k, v) in labels {
            if let Some(values) = self.by_label.get_mut(k.as_str()) {
                drop_key(values, v.as_str(), key);
                if values.is_empty() {
                    self.by_label.remove(k.as_str());
                }
            }
        }
    }
}

impl<T: Indexed> Table<T> {
    /// Adds `object` as the newest one. Its id must not be in the table yet.
    pub(crate) fn insert(&mut self, object: T) -> Key {
        let key = Key(self.next);
        self.next += 1;
        debug_assert!(!self.ids.contains_key(object.id()), "duplicate id");
        self.ids.insert(object.id().to_owned(), key);
        if let Some(group) = object.group() {
            self.by_group
                .entry(group.to_owned())
                .or_default()
                .insert(key);
        }
        self.facets.index(object.state(), object.labels(), key);
        self.objects.insert(key, object);
        key
    }

    /// Changes the object at `key` through `change`, re-indexing its state and labels.
    pub(crate) fn update<R>(&mut self, key: Key, change: impl FnOnce(&mut T) -> R) -> Option<R> {
        let object = self.objects.get_mut(&key)?;
        let (state, labels) = (object.state(), object.labels().clone());
        let result = change(object);
        debug_assert!(self.ids.get(object.id()) == Some(&key), "id changed");
        if object.state() != state || object.labels() != &labels {
            self.facets.unindex(state, &labels, key);
            self.facets.index(object.state(), object.labels(), key);
        }
        Some(result)
    }

    /// Removes and answers the object at `key`.
    pub(crate) fn remove(&mut self, key: Key) -> Option<T> {
        let object = self.objects.remove(&key)?;
        self.ids.remove(object.id());
        if let Some(group) = object.group() {
            if let Some(members) = self.by_group.get_mut(group) {
                members.remove(&key);
                if members.is_empty() {
                    self.by_group.remove(group);
                }
            }
        }
        self.facets.unindex(object.state(), object.labels(), key);
        Some(object)
    }

    /// The object with exactly this id.
    pub(crate) fn find_exact(&self, id: &str) -> Option<Key> {
        self.ids.get(id).copied()
    }

    /// The object `given` names: its full id or a unique prefix of it.
    pub(crate) fn lookup(&self, given: &str) -> Lookup<Key> {
        match lookup(&self.ids, given) {
            Lookup::Found((_, key)) => Lookup::Found(*key),
            Lookup::Missing => Lookup::Missing,
            Lookup::Ambiguous => Lookup::Ambiguous,
        }
    }

    /// The objects whose id starts with `prefix`, in id order.
    pub(crate) fn iter_prefixed<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (Key, &'a T)> + 'a {
        prefixed(&self.ids, prefix).filter_map(|(_, key)| Some((*key, self.objects.get(key)?)))
    }

    /// Every group id some object belongs to, for prefix resolution.
    pub(crate) fn groups(&self) -> &BTreeMap<String, BTreeSet<Key>> {
        &self.by_group
    }

    /// All objects, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Key, &T)> + '_ {
        self.objects.iter().map(|(key, object)| (*key, object))
    }

    /// The objects of `group`, oldest first.
    pub(crate) fn in_group<'a>(&'a self, group: &str) -> impl Iterator<Item = (Key, &'a T)> + 'a {
        self.by_group
            .get(group)
            .into_iter()
            .flatten()
            .filter_map(|key| Some((*key, self.objects.get(key)?)))
    }

    /// The objects `filter` matches, oldest first. Walks the smallest index the filter names
    /// (id, group, state or one label pair) and checks the rest on each object it finds there.
    pub(crate) fn select<'a>(
        &'a self,
        filter: Filter<'a>,
    ) -> Box<dyn Iterator<Item = (Key, &'a T)> + 'a> {
        if let Some(id) = filter.id {
            let found = self.find_exact(id).and_then(|key| {
                let object = self.objects.get(&key)?;
                filter.matches(object).then_some((key, object))
            });
            return Box::new(found.into_iter());
        }
        static EMPTY: BTreeSet<Key> = BTreeSet::new();
        let mut candidates: Vec<&BTreeSet<Key>> = Vec::new();
        if let Some(group) = filter.group {
            candidates.push(self.by_group.get(group).unwrap_or(&EMPTY));
        }
        if let Some(state) = filter.state {
            candidates.push(self.facets.by_state.get(&state).unwrap_or(&EMPTY));
        }
        for (k, v) in filter.labels.into_iter().flatten() {
            let holders = self
                .facets
                .by_label
                .get(k.as_str())
                .and_then(|values| values.get(v.as_str()));
            candidates.push(holders.unwrap_or(&EMPTY));
        }
        match candidates.into_iter().min_by_key(|set| set.len()) {
            None => Box::new(self.iter()),
            // Walking the table in order is about ten times cheaper per object than looking
            // each key of an index up, so a filter that keeps most objects scans instead.
            Some(smallest) if smallest.len() * SCAN_RATIO >= self.objects.len() => Box::new(
                self.iter()
                    .filter(move |(_, object)| filter.matches(*object)),
            ),
            Some(smallest) => Box::new(smallest.iter().filter_map(move |key| {
                let object = self.objects.get(key)?;
                filter.matches(object).then_some((*key, object))
            })),
        }
    }
}

impl<T> std::ops::Index<Key> for Table<T> {
    type Output = T;

    /// Keys come from a lookup under the same lock, so the object is there.
    fn index(&self, key: Key) -> &T {
        &self.objects[&key]
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct Item {
        id: String,
        state: i32,
        labels: BTreeMap<String, String>,
        group: Option<String>,
    }

    impl Indexed for Item {
        fn id(&self) -> &str {
            &self.id
        }
        fn state(&self) -> i32 {
            self.state
        }
        fn labels(&self) -> &BTreeMap<String, String> {
            &self.labels
        }
        fn group(&self) -> Option<&str> {
            self.group.as_deref()
        }
    }

    fn item(id: &str, state: i32, label: &str, group: &str) -> Item {
        Item {
            id: id.to_owned(),
            state,
            labels: [("l".to_owned(), label.to_owned())].into(),
            group: Some(group.to_owned()),
        }
    }

    fn ids<'a>(found: impl Iterator<Item = (Key, &'a Item)>) -> Vec<&'a str> {
        found.map(|(_, item)| item.id.as_str()).collect()
    }

    #[rstest]
    #[case::exact_wins_over_prefix(&["ab", "abc"], "ab", Lookup::Found("ab"))]
    #[case::unique_prefix(&["abc", "def"], "d", Lookup::Found("def"))]
    #[case::shared_prefix(&["abc", "abd"], "ab", Lookup::Ambiguous)]
    #[case::no_match(&["abc"], "x", Lookup::Missing)]
    #[case::past_the_end(&["abc"], "abcd", Lookup::Missing)]
    #[case::empty_is_no_id(&["abc"], "", Lookup::Missing)]
    fn ids_resolve_exactly_or_by_unique_prefix(
        #[case] ids: &[&str],
        #[case] given: &str,
        #[case] expected: Lookup<&str>,
    ) {
        let map: BTreeMap<String, ()> = ids.iter().map(|id| ((*id).to_owned(), ())).collect();
        let found = match lookup(&map, given) {
            Lookup::Found((id, ())) => Lookup::Found(id),
            Lookup::Missing => Lookup::Missing,
            Lookup::Ambiguous => Lookup::Ambiguous,
        };
        assert_eq!(found, expected);
    }

    #[test]
    fn a_filtered_list_answers_oldest_first_whichever_index_it_walks() {
        let mut table = Table::default();
        for (id, state, label, group) in [
            ("d", 0, "x", "g1"),
            ("a", 1, "x", "g2"),
            ("c", 0, "y", "g1"),
            ("b", 0, "x", "g1"),
        ] {
            table.insert(item(id, state, label, group));
        }
        let x: BTreeMap<String, String> = [("l".to_owned(), "x".to_owned())].into();
        let by_label = Filter {
            labels: Some(&x),
            ..Default::default()
        };
        let by_group_and_state = Filter {
            group: Some("g1"),
            state: Some(0),
            labels: Some(&x),
            ..Default::default()
        };
        assert_eq!(ids(table.select(by_label)), ["d", "a", "b"]);
        assert_eq!(ids(table.select(by_group_and_state)), ["d", "b"]);
        assert_eq!(ids(table.select(Filter::default())), ["d", "a", "c", "b"]);
        // Thirty more objects make the label index small enough to walk rather than scan.
        for n in 0..30 {
            table.insert(item(&format!("z{n}"), 0, "z", "g3"));
        }
        assert_eq!(ids(table.select(by_label)), ["d", "a", "b"]);
        assert_eq!(ids(table.select(by_group_and_state)), ["d", "b"]);
    }

    #[test]
    fn an_update_moves_the_object_between_state_and_label_indexes() {
        let mut table = Table::default();
        let key = table.insert(item("a", 0, "x", "g"));
        table.update(key, |item| {
            item.state = 2;
            item.labels.insert("l".to_owned(), "y".to_owned());
        });
        let y: BTreeMap<String, String> = [("l".to_owned(), "y".to_owned())].into();
        let x: BTreeMap<String, String> = [("l".to_owned(), "x".to_owned())].into();
        let state = |state| Filter {
            state: Some(state),
            ..Default::default()
        };
        let label = |labels| Filter {
            labels: Some(labels),
            ..Default::default()
        };
        assert_eq!(ids(table.select(state(2))), ["a"]);
        assert!(ids(table.select(state(0))).is_empty());
        assert_eq!(ids(table.select(label(&y))), ["a"]);
        assert!(ids(table.select(label(&x))).is_empty());
    }

    #[test]
    fn removing_an_object_forgets_it_in_every_index() {
        let mut table = Table::default();
        let key = table.insert(item("abc", 0, "x", "g"));
        table.insert(item("def", 0, "x", "h"));
        assert_eq!(table.remove(key).map(|i| i.id), Some("abc".to_owned()));
        assert_eq!(table.lookup("a"), Lookup::Missing);
        assert_eq!(table.in_group("g").count(), 0);
        assert!(!table.groups().contains_key("g"));
        assert_eq!(ids(table.select(Filter::default())), ["def"]);
    }
}
