//! Database columns of the newtypes (features `sqlx` and `rusqlite`): each
//! is stored as its text and read back through its validating constructor,
//! so a row holding anything else is an error where it is read, never a
//! value that slipped past validation. Only the drivers' traits: this crate
//! opens nothing.

#[cfg(feature = "sqlx")]
use sqlx::{Database, Decode, Encode, Type, encode::IsNull, error::BoxDynError};

use crate::{
    Kind, PackageName, Username, Version,
    advisories::AdvisoryId,
    crypt::PromptKeyId,
    digest::Sha256Digest,
    grants::{PromptMode, Recipient},
    signing::KeyId,
};

/// Implements `Type`, `Decode` and `Encode` for a newtype stored as text:
/// `parse` builds it from the column's `&str`, `text` gives its spelling.
macro_rules! text_column {
    ($ty:ty, parse: $parse:expr, text: $text:expr) => {
        #[cfg(feature = "rusqlite")]
        impl rusqlite::types::FromSql for $ty {
            fn column_result(
                value: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<Self> {
                let text = value.as_str()?;
                let parse: fn(&str) -> Result<$ty, String> = $parse;
                parse(text).map_err(|message| {
                    rusqlite::types::FromSqlError::Other(
                        format!(
                            "{text:?} read from the database is not a valid {}: {message}",
                            stringify!($ty)
                        )
                        .into(),
                    )
                })
            }
        }

        #[cfg(feature = "sqlx")]
        impl<DB: Database> Type<DB> for $ty
        where
            str: Type<DB>,
        {
            fn type_info() -> DB::TypeInfo {
                <str as Type<DB>>::type_info()
            }

            fn compatible(ty: &DB::TypeInfo) -> bool {
                <str as Type<DB>>::compatible(ty)
            }
        }

        #[cfg(feature = "sqlx")]
        impl<'r, DB: Database> Decode<'r, DB> for $ty
        where
            &'r str: Decode<'r, DB>,
        {
            fn decode(value: DB::ValueRef<'r>) -> Result<Self, BoxDynError> {
                let text = <&'r str as Decode<'r, DB>>::decode(value)?;
                let parse: fn(&str) -> Result<$ty, String> = $parse;
                parse(text).map_err(|message| {
                    format!(
                        "{text:?} read from the database is not a valid {}: {message}",
                        stringify!($ty)
                    )
                    .into()
                })
            }
        }

        #[cfg(feature = "sqlx")]
        impl<'q, DB: Database> Encode<'q, DB> for $ty
        where
            String: Encode<'q, DB>,
        {
            fn encode_by_ref(&self, buf: &mut DB::ArgumentBuffer) -> Result<IsNull, BoxDynError> {
                let text: fn(&$ty) -> String = $text;
                <String as Encode<'q, DB>>::encode(text(self), buf)
            }
        }
    };
}

text_column!(Kind, parse: |s| s.parse().map_err(|e: crate::NameError| e.to_string()), text: |k| k.as_str().to_owned());
text_column!(PackageName, parse: |s| PackageName::new(s).map_err(|e| e.to_string()), text: |n| n.as_str().to_owned());
text_column!(Version, parse: |s| Version::parse(s).map_err(|e| e.to_string()), text: Version::to_string);
text_column!(Username, parse: Username::parse, text: |u| u.as_str().to_owned());
text_column!(AdvisoryId, parse: AdvisoryId::parse, text: |i| i.as_str().to_owned());
text_column!(KeyId, parse: |s| KeyId::new(s).map_err(|e| e.to_string()), text: |k| k.as_str().to_owned());
text_column!(PromptKeyId, parse: |s| PromptKeyId::parse(s).map_err(|e| e.to_string()), text: |k| k.as_str().to_owned());
text_column!(Recipient, parse: |s| Recipient::parse(s).map_err(|e| e.to_string()), text: Recipient::to_string);
text_column!(PromptMode, parse: |s| match s {
    "open" => Ok(PromptMode::Open),
    "sealed" => Ok(PromptMode::Sealed),
    _ => Err("expected open or sealed".to_owned()),
}, text: |m| m.as_str().to_owned());
text_column!(Sha256Digest, parse: |s| Sha256Digest::parse_hex(s).map_err(|e| e.to_string()), text: Sha256Digest::to_hex);
