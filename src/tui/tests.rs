//! The view's data model on scripted ticks and steps, drawn on ratatui's `TestBackend`.
