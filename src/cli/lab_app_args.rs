//! `overload lab up`'s flags for the application stacks (wordpress, gallery, symfony): which web stack serves
//! the app and how much content it gets.
use clap::Args;

use crate::lab::{Size, Stack};

#[derive(Args, Debug, Default)]
pub struct LabAppArgs {
    /// App stacks: the web stack serving it [default: nginx-fpm].
    ///
    /// wordpress: nginx-fpm, apache-prefork or apache-event-fpm; gallery: nginx-fpm or
    /// nginx-fpm-cache; symfony: nginx-fpm or php-persistent. That stack's knobs then apply
    /// too.
    #[arg(long, value_enum, value_name = "STACK", hide_possible_values = true)]
    pub web: Option<Stack>,
    /// App stacks: how much content [default: small].
    ///
    /// Generated once and kept. wordpress small: 200 users, 1,000 posts, 10,000 comments;
    /// medium: 2,000, 10,000, 100,000.
    #[arg(
        long,
        value_enum,
        value_name = "small|medium",
        hide_possible_values = true
    )]
    pub size: Option<Size>,
}

impl clap::ValueEnum for Size {
    fn value_variants<'a>() -> &'a [Self] {
        &Size::ALL
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}
