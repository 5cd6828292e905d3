//! Ids of the simulation's actors: an index into the scenario's list of
//! them, typed so that an API server's index is never taken for a
//! component's.

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub usize);

        impl $name {
            /// Its position in the scenario's list.
            pub fn index(self) -> usize {
                self.0
            }
        }
    };
}

id!(
    /// An API server: its position in the scenario's `apiServers`.
    ServerId
);
id!(
    /// A component: its position in the scenario's `components`.
    ComponentId
);
id!(
    /// A node: its position in the scenario's `nodes`.
    NodeId
);
