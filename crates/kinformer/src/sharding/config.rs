//! [`ShardingConfig`]: who this replica is, where the membership leases live, and their timing.

use std::time::Duration;

use super::error::ShardingError;
use crate::leaderelection::{
    DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD, JITTER_FACTOR,
    LeaderElectionError,
};

/// Default [`ShardingConfig::lease_prefix`].
pub const DEFAULT_LEASE_PREFIX: &str = "kinformer-shard-";
/// Default [`ShardingConfig::sharder_lease`].
pub const DEFAULT_SHARDER_LEASE: &str = "kinformer-sharder";

/// Configuration of a replica's [`Membership`](super::Membership) (and, in labelled mode, of
/// the [`Sharder`](super::Sharder) election). Build with [`new`](Self::new), adjust the public
/// fields; constructors that take it call [`validate`](Self::validate).
///
/// Each replica holds the lease `<namespace>/<lease_prefix><identity>`; the sharder's leader
/// election uses `<namespace>/<sharder_lease>`. The timing knobs mean what they mean in
/// [`LeaderElectionConfig`](crate::leaderelection::LeaderElectionConfig), and the same
/// requirements hold, plus `join_delay ≥ lease_duration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardingConfig {
    /// This replica's identity: its lease name suffix and its shard label value.
    pub identity: String,
    /// Namespace of the membership leases.
    pub namespace: String,
    /// Prefix of the membership lease names; leases with other names are ignored.
    pub lease_prefix: String,
    /// Name of the sharder's leader-election lease (labelled mode).
    pub sharder_lease: String,
    /// How long a member's lease stays fresh, to an observer, after the observer last saw it
    /// change.
    pub lease_duration: Duration,
    /// How long a replica keeps retrying a renewal before it considers itself gone; also how
    /// old its last successful view of the other leases may be before it stops claiming keys.
    pub renew_deadline: Duration,
    /// Period of renewals and of membership polls.
    pub retry_period: Duration,
    /// How long a replica waits after acquiring its lease before it claims keys in filtered
    /// mode (at least `lease_duration`).
    pub join_delay: Duration,
}

impl ShardingConfig {
    /// A configuration with leader election's defaults (15 s lease, 10 s renew deadline, 2 s
    /// retry period), a join delay of one lease duration, and the default lease names.
    pub fn new(identity: impl Into<String>, namespace: impl Into<String>) -> Self {
        Self {
            identity: identity.into(),
            namespace: namespace.into(),
            lease_prefix: DEFAULT_LEASE_PREFIX.to_owned(),
            sharder_lease: DEFAULT_SHARDER_LEASE.to_owned(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            join_delay: DEFAULT_LEASE_DURATION,
        }
    }

    /// Sets the three lease timings, and the join delay to the lease duration.
    #[must_use]
    pub fn with_timing(
        mut self,
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    ) -> Self {
        self.lease_duration = lease_duration;
        self.renew_deadline = renew_deadline;
        self.retry_period = retry_period;
        self.join_delay = lease_duration;
        self
    }

    /// The name of `identity`'s membership lease.
    pub fn lease_name(&self, identity: &str) -> String {
        format!("{}{identity}", self.lease_prefix)
    }

    /// The member identity a lease name stands for, if it is a membership lease.
    pub fn identity_of_lease<'a>(&self, lease_name: &'a str) -> Option<&'a str> {
        lease_name
            .strip_prefix(self.lease_prefix.as_str())
            .filter(|identity| !identity.is_empty())
    }

    /// Checks the requirements listed on the type.
    ///
    /// # Errors
    ///
    /// The first requirement violated, as a [`ShardingError`].
    pub fn validate(&self) -> Result<(), ShardingError> {
        validate_identity(&self.identity)?;
        for (field, value) in [
            ("namespace", &self.namespace),
            ("lease_prefix", &self.lease_prefix),
            ("sharder_lease", &self.sharder_lease),
        ] {
            if value.is_empty() {
                return Err(ShardingError::Empty { field });
            }
        }
        for (field, value) in [
            ("lease_duration", self.lease_duration),
            ("renew_deadline", self.renew_deadline),
            ("retry_period", self.retry_period),
        ] {
            if value.is_zero() {
                return Err(LeaderElectionError::ZeroDuration { field }.into());
            }
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(LeaderElectionError::LeaseDurationNotAboveRenewDeadline {
                lease_duration: self.lease_duration,
                renew_deadline: self.renew_deadline,
            }
            .into());
        }
        if self.renew_deadline <= self.retry_period.mul_f64(JITTER_FACTOR) {
            return Err(LeaderElectionError::RenewDeadlineNotAboveJitteredRetry {
                renew_deadline: self.renew_deadline,
                retry_period: self.retry_period,
            }
            .into());
        }
        if self.join_delay < self.lease_duration {
            return Err(ShardingError::JoinDelayTooShort {
                join_delay: self.join_delay,
                lease_duration: self.lease_duration,
            });
        }
        Ok(())
    }
}

/// Checks that `identity` can be a lease name suffix and a label value.
fn validate_identity(identity: &str) -> Result<(), ShardingError> {
    let invalid = |reason| ShardingError::InvalidIdentity {
        identity: identity.to_owned(),
        reason,
    };
    if identity.is_empty() || identity.len() > 63 {
        return Err(invalid("it must be 1 to 63 characters long"));
    }
    if !identity
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    {
        return Err(invalid(
            "only lowercase letters, digits, '-' and '.' are allowed",
        ));
    }
    let alnum = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_alphanumeric());
    if !alnum(identity.bytes().next()) || !alnum(identity.bytes().last()) {
        return Err(invalid("it must start and end with a letter or digit"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_bad_values_are_refused() {
        let config = ShardingConfig::new("replica-0", "kube-system");
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(config.lease_name("a"), "kinformer-shard-a");
        assert_eq!(config.identity_of_lease("kinformer-shard-a"), Some("a"));
        assert_eq!(config.identity_of_lease("kinformer-sharder"), None);
        assert_eq!(config.identity_of_lease("kinformer-shard-"), None);
        for bad in ["", "Replica", "-a", "a-", "a_b", &"a".repeat(64)] {
            let config = ShardingConfig::new(bad, "ns");
            assert!(
                matches!(
                    config.validate(),
                    Err(ShardingError::InvalidIdentity { .. })
                ),
                "{bad:?}"
            );
        }
        let mut config = ShardingConfig::new("a", "ns");
        config.join_delay = config.lease_duration / 2;
        assert!(matches!(
            config.validate(),
            Err(ShardingError::JoinDelayTooShort { .. })
        ));
        let config = ShardingConfig::new("a", "ns").with_timing(
            Duration::from_secs(5),
            Duration::from_secs(6),
            Duration::from_secs(1),
        );
        assert!(matches!(config.validate(), Err(ShardingError::Timing(_))));
        let config = ShardingConfig::new("a", "");
        assert_eq!(
            config.validate(),
            Err(ShardingError::Empty { field: "namespace" })
        );
    }
}
