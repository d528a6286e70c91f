//! The store's scenarios (cases.rs), run once over each representation: objects shared as
//! `Arc<K>`, and compact (encoded, decoded on read, index values remembered).

use kubeclient_machinery::Object;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::cache::{CompactRepr, SharedOrCompact};

mod shared {
    use super::*;

    fn repr<K>() -> SharedOrCompact<K> {
        SharedOrCompact::Shared
    }

    include!("cases.rs");
}

mod compact {
    use super::*;

    fn repr<K: Object + Serialize + DeserializeOwned>() -> SharedOrCompact<K> {
        SharedOrCompact::Compact(CompactRepr::new())
    }

    include!("cases.rs");
}
