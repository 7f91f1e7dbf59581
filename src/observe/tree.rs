//! An ordered, format-neutral tree of what was observed: any `Serialize` value becomes a
//! [`Node`] with its fields in declaration order, so redaction can look at keys (timestamps by
//! name) and values alike before the tree is written out as YAML.

use serde::ser::{self, Serialize};

/// One value of an observation tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// `None`, `()` and unit structs.
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer above `i64::MAX`.
    Uint(u64),
    /// A float.
    Float(f64),
    /// A string (also chars, bytes as lossy text, and unit enum variants by name).
    Str(String),
    /// A sequence or tuple.
    Seq(Vec<Node>),
    /// A map or struct, in insertion (declaration) order.
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// The value as a string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Str(text) => Some(text),
            _ => None,
        }
    }

    /// The entry under `key` of a map.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

impl Serialize for Node {
    fn serialize<S: ser::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use ser::{SerializeMap, SerializeSeq};
        match self {
            Node::Null => serializer.serialize_unit(),
            Node::Bool(b) => serializer.serialize_bool(*b),
            Node::Int(n) => serializer.serialize_i64(*n),
            Node::Uint(n) => serializer.serialize_u64(*n),
            Node::Float(n) => serializer.serialize_f64(*n),
            Node::Str(text) => serializer.serialize_str(text),
            Node::Seq(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Node::Map(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

/// A value that cannot become a tree (only a failing `Serialize` impl produces one).
#[derive(Debug, thiserror::Error)]
#[error("cannot record the value: {0}")]
pub struct TreeError(String);

impl ser::Error for TreeError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        TreeError(msg.to_string())
    }
}

/// The tree of any serializable value.
pub fn to_node<T: Serialize + ?Sized>(value: &T) -> Result<Node, TreeError> {
    value.serialize(TreeSerializer)
}

/// A tree for a value, or a string saying why there is none (never expected for our types).
pub fn node_or_note<T: Serialize + ?Sized>(value: &T) -> Node {
    to_node(value).unwrap_or_else(|err| Node::Str(err.to_string()))
}

struct TreeSerializer;

/// Builds a sequence node.
pub struct SeqBuilder(Vec<Node>);

/// Builds a map node; a newtype-variant wrapper remembers its variant name.
pub struct MapBuilder {
    entries: Vec<(Node, Node)>,
    key: Option<Node>,
    variant: Option<&'static str>,
}

fn wrap(variant: Option<&'static str>, node: Node) -> Node {
    match variant {
        Some(name) => Node::Map(vec![(Node::Str(name.to_owned()), node)]),
        None => node,
    }
}

impl ser::Serializer for TreeSerializer {
    type Ok = Node;
    type Error = TreeError;
    type SerializeSeq = SeqBuilder;
    type SerializeTuple = SeqBuilder;
    type SerializeTupleStruct = SeqBuilder;
    type SerializeTupleVariant = MapBuilder;
    type SerializeMap = MapBuilder;
    type SerializeStruct = MapBuilder;
    type SerializeStructVariant = MapBuilder;

    fn serialize_bool(self, v: bool) -> Result<Node, TreeError> {
        Ok(Node::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Node, TreeError> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<Node, TreeError> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<Node, TreeError> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<Node, TreeError> {
        Ok(Node::Int(v))
    }
    fn serialize_u8(self, v: u8) -> Result<Node, TreeError> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<Node, TreeError> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<Node, TreeError> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<Node, TreeError> {
        Ok(i64::try_from(v).map_or(Node::Uint(v), Node::Int))
    }
    fn serialize_f32(self, v: f32) -> Result<Node, TreeError> {
        Ok(Node::Float(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<Node, TreeError> {
        Ok(Node::Float(v))
    }
    fn serialize_char(self, v: char) -> Result<Node, TreeError> {
        Ok(Node::Str(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Node, TreeError> {
        Ok(Node::Str(v.to_owned()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Node, TreeError> {
        Ok(Node::Str(String::from_utf8_lossy(v).into_owned()))
    }
    fn serialize_none(self) -> Result<Node, TreeError> {
        Ok(Node::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Node, TreeError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Node, TreeError> {
        Ok(Node::Null)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Node, TreeError> {
        Ok(Node::Null)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Node, TreeError> {
        Ok(Node::Str(variant.to_owned()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Node, TreeError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Node, TreeError> {
        Ok(wrap(Some(variant), value.serialize(TreeSerializer)?))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqBuilder, TreeError> {
        Ok(SeqBuilder(Vec::with_capacity(len.unwrap_or(0))))
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqBuilder, TreeError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<SeqBuilder, TreeError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<MapBuilder, TreeError> {
        Ok(MapBuilder {
            entries: Vec::new(),
            key: None,
            variant: Some(variant),
        })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<MapBuilder, TreeError> {
        Ok(MapBuilder {
            entries: Vec::with_capacity(len.unwrap_or(0)),
            key: None,
            variant: None,
        })
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<MapBuilder, TreeError> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<MapBuilder, TreeError> {
        Ok(MapBuilder {
            entries: Vec::with_capacity(len),
            key: None,
            variant: Some(variant),
        })
    }
}

impl ser::SerializeSeq for SeqBuilder {
    type Ok = Node;
    type Error = TreeError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), TreeError> {
        self.0.push(value.serialize(TreeSerializer)?);
        Ok(())
    }
    fn end(self) -> Result<Node, TreeError> {
        Ok(Node::Seq(self.0))
    }
}

impl ser::SerializeTuple for SeqBuilder {
    type Ok = Node;
    type Error = TreeError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), TreeError> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<Node, TreeError> {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleStruct for SeqBuilder {
    type Ok = Node;
    type Error = TreeError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), TreeError> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<Node, TreeError> {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleVariant for MapBuilder {
    type Ok = Node;
    type Error = TreeError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), TreeError> {
        // A tuple variant's fields are kept as a sequence under the variant's name.
        self.entries
            .push((Node::Null, value.serialize(TreeSerializer)?));
        Ok(())
    }
    fn end(self) -> Result<Node, TreeError> {
        let items = self.entries.into_iter().map(|(_, v)| v).collect();
        Ok(wrap(self.variant, Node::Seq(items)))
    }
}

impl ser::SerializeMap for MapBuilder {
    type Ok = Node;
    type Error = TreeError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), TreeError> {
        self.key = Some(key.serialize(TreeSerializer)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), TreeError> {
        let key = self
            .key
            .take()
            .ok_or_else(|| TreeError("a map value came without its key".to_owned()))?;
        self.entries.push((key, value.serialize(TreeSerializer)?));
        Ok(())
    }
    fn end(self) -> Result<Node, TreeError> {
        Ok(wrap(self.variant, Node::Map(self.entries)))
    }
}

impl ser::SerializeStruct for MapBuilder {
    type Ok = Node;
    type Error = TreeError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), TreeError> {
        self.entries
            .push((Node::Str(key.to_owned()), value.serialize(TreeSerializer)?));
        Ok(())
    }
    fn end(self) -> Result<Node, TreeError> {
        ser::SerializeMap::end(self)
    }
}

impl ser::SerializeStructVariant for MapBuilder {
    type Ok = Node;
    type Error = TreeError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), TreeError> {
        ser::SerializeStruct::serialize_field(self, key, value)
    }
    fn end(self) -> Result<Node, TreeError> {
        ser::SerializeMap::end(self)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;

    use super::*;

    #[derive(Serialize)]
    struct Sample {
        zeta: u32,
        alpha: Option<String>,
        kind: Kind,
        map: BTreeMap<&'static str, i64>,
    }

    #[derive(Serialize)]
    enum Kind {
        Plain,
    }

    #[test]
    fn struct_fields_keep_their_declaration_order_and_variants_their_names() {
        let node = to_node(&Sample {
            zeta: 1,
            alpha: None,
            kind: Kind::Plain,
            map: BTreeMap::from([("b", 2), ("a", 1)]),
        })
        .unwrap();
        let Node::Map(entries) = &node else {
            panic!("not a map: {node:?}")
        };
        let keys: Vec<&str> = entries.iter().filter_map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["zeta", "alpha", "kind", "map"]);
        assert_eq!(node.get("alpha"), Some(&Node::Null));
        assert_eq!(node.get("kind"), Some(&Node::Str("Plain".to_owned())));
        assert_eq!(
            node.get("map"),
            Some(&Node::Map(vec![
                (Node::Str("a".to_owned()), Node::Int(1)),
                (Node::Str("b".to_owned()), Node::Int(2)),
            ]))
        );
    }
}
