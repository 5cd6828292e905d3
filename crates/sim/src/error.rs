//! Errors building or driving a simulation.

/// Why a simulation could not be built or driven.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// A component names a controller nobody provides. Fix the name or
    /// supply the plugin.
    #[error("component {component:?} uses controller {controller:?}, which is not known")]
    UnknownController {
        /// Where in the scenario, e.g. `components[2].controller`.
        path: String,
        /// The component.
        component: String,
        /// The unknown controller name.
        controller: String,
    },
    /// An initial object could not be written (e.g. two with the same name).
    #[error("initial object {object} could not be created: {reason}")]
    Bootstrap {
        /// The object.
        object: String,
        /// Why.
        reason: String,
        /// Its index among the nodes followed by the objects.
        index: usize,
    },
    /// A request named an API server the scenario does not have.
    #[error("there is no API server named {0:?}")]
    UnknownApiServer(String),
}
