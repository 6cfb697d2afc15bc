//! agora-study
