//! What a Recon controller author uses: an informer cache fed by the host's events, typed helpers.
