//! `overload lab up`'s flags for the application stacks (wordpress, gallery, symfony): which web stack serves
//! the app and how much content it gets.
use clap::Args;

use crate::lab::{Size, Stack};

#[derive(Args, Debug, Default)]
pub struct LabAppArgs {
    /// App stacks: the web stack serving the app (wordpress: nginx-fpm, apache-prefork or
    /// apache-event-fpm; gallery: nginx-fpm or nginx-fpm-cache; symfony: nginx-fpm or
    /// php-persistent) [default: nginx-fpm]; that stack's knobs then apply too.
    #[arg(long, value_enum, value_name = "STACK")]
    pub web: Option<Stack>,
    /// App stacks: generated content (wordpress small: 200 users, 1,000 posts, 10,000
    /// comments; medium: 2,000, 10,000, 100,000), made once and kept [default: small].
    #[arg(long, value_enum)]
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
