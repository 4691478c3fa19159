//! The partner program's rows: partners, the accounts they provision (claim links, deletion, the first upgrade
//! that locks the revenue share), webhook nonces (single use on every instance), and the ledger counts of usage.

use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, FromQueryResult, QueryFilter, QueryOrder, Statement,
    TransactionTrait,
};

use super::entity::{agent, api_key, entity, partner, partner_nonce, partner_user};
use super::{Store, StoreError};

/// A new account for a partner's user: the partner user row, and the account, first agent and first key it owns.
pub struct NewPartnerUser {
    pub user: partner_user::Model,
    pub account: entity::Model,
    pub agent: agent::Model,
    pub key: api_key::Model,
}

/// What provisioning did.
#[derive(Debug)]
pub enum Provisioned {
    /// A new account.
    New(partner_user::Model),
    /// The partner already had a user with this external id: nothing changed.
    Existing(partner_user::Model),
    /// A webhook nonce used before: nothing changed.
    Replayed,
}

/// What reporting a user deleted did.
#[derive(Debug)]
pub enum Deleted {
    /// Marked deleted now (its keys revoked).
    Now(Box<partner_user::Model>),
    /// Deleted before: nothing changed.
    Before(Box<partner_user::Model>),
    /// The partner has no user with this external id.
    NotFound,
    Replayed,
}

/// What following a claim link did.
#[derive(Debug)]
pub enum Claimed {
    Now(Box<partner_user::Model>),
    /// No claim link has this token.
    Unknown,
    /// The link was used before.
    Used,
    /// The link expired (at this time, Unix ms).
    Expired(i64),
    /// The account was deleted by its partner.
    Deleted,
    /// Another account has the email.
    EmailTaken,
}

/// A webhook nonce to use up in the transaction that applies the event: the partner, the nonce, now, and the time
/// before which used nonces are forgotten (older than the signature's tolerance, they cannot be replayed anyway).
pub struct Nonce<'a> {
    pub partner_id: &'a str,
    pub nonce: &'a str,
    pub now_ms: i64,
    pub forget_before_ms: i64,
}

/// One partner user's calls in a period (ledger rows).
#[derive(Debug, FromQueryResult)]
pub struct UserCalls {
    pub entity_id: String,
    pub calls: i64,
}

impl Store {
    /// A new partner; a taken slug is `StoreError::Conflict`.
    pub async fn create_partner(&self, p: partner::Model) -> Result<(), StoreError> {
        partner::Entity::insert(partner::ActiveModel::from(p)).exec_without_returning(&self.writer).await?;
        Ok(())
    }

    /// Every partner, oldest first.
    pub async fn partners(&self) -> Result<Vec<partner::Model>, StoreError> {
        Ok(partner::Entity::find().order_by_asc(partner::Column::CreatedAt).order_by_asc(partner::Column::Id).all(&self.db).await?)
    }

    pub async fn partner_by_slug(&self, slug: &str) -> Result<Option<partner::Model>, StoreError> {
        Ok(partner::Entity::find().filter(partner::Column::Slug.eq(slug)).one(&self.db).await?)
    }

    pub async fn partner_by_key_hash(&self, hash: &str) -> Result<Option<partner::Model>, StoreError> {
        Ok(partner::Entity::find().filter(partner::Column::KeyHash.eq(hash)).one(&self.db).await?)
    }

    /// Saves a partner's changed columns (active, secrets, terms) by slug; `None` when no partner has it.
    pub async fn update_partner(&self, slug: &str, change: impl FnOnce(&mut partner::Model)) -> Result<Option<partner::Model>, StoreError> {
        let txn = self.writer.begin().await?;
        let Some(mut p) = partner::Entity::find().filter(partner::Column::Slug.eq(slug)).one(&txn).await? else { return Ok(None) };
        change(&mut p);
        partner::Entity::update(partner::ActiveModel::from(p.clone()).reset_all()).exec(&txn).await?;
        txn.commit().await?;
        Ok(Some(p))
    }

    /// Provisions an account for a partner's user, once per external id: concurrent calls with one external id make
    /// one account (the unique key over partner and external id), and the others find it. With a webhook nonce, the
    /// nonce is used up in the same transaction (a replay changes nothing).
    pub async fn provision(&self, new: NewPartnerUser, nonce: Option<Nonce<'_>>) -> Result<Provisioned, StoreError> {
        let txn = self.writer.begin().await?;
        if let Some(n) = &nonce {
            if !use_nonce(&txn, n).await? {
                return Ok(Provisioned::Replayed);
            }
        }
        let (partner_id, external_id) = (new.user.partner_id.clone(), new.user.external_id.clone());
        if let Some(found) = find_user(&txn, &partner_id, &external_id).await? {
            txn.commit().await?;
            return Ok(Provisioned::Existing(found));
        }
        let inner = txn.begin().await?;
        let inserted = async {
            partner_user::Entity::insert(partner_user::ActiveModel::from(new.user.clone())).exec_without_returning(&inner).await?;
            entity::Entity::insert(entity::ActiveModel::from(new.account)).exec_without_returning(&inner).await?;
            agent::Entity::insert(agent::ActiveModel::from(new.agent)).exec_without_returning(&inner).await?;
            api_key::Entity::insert(api_key::ActiveModel::from(new.key)).exec_without_returning(&inner).await?;
            Ok::<_, StoreError>(())
        }
        .await;
        match inserted {
            Ok(()) => {
                inner.commit().await?;
                txn.commit().await?;
                Ok(Provisioned::New(new.user))
            }
            Err(StoreError::Conflict(e)) => {
                // Another call provisioned this external id meanwhile: its account is the one.
                inner.rollback().await?;
                let found = find_user(&txn, &partner_id, &external_id).await?.ok_or(StoreError::Conflict(e))?;
                txn.commit().await?;
                Ok(Provisioned::Existing(found))
            }
            Err(e) => Err(e),
        }
    }

    /// Marks a partner's user deleted and revokes its account's keys (its ledger is kept); with a webhook nonce, used
    /// up in the same transaction.
    pub async fn delete_partner_user(&self, partner_id: &str, external_id: &str, nonce: Nonce<'_>) -> Result<Deleted, StoreError> {
        let txn = self.writer.begin().await?;
        if !use_nonce(&txn, &nonce).await? {
            return Ok(Deleted::Replayed);
        }
        let Some(mut user) = find_user(&txn, partner_id, external_id).await? else {
            txn.commit().await?;
            return Ok(Deleted::NotFound);
        };
        if user.deleted_at.is_some() {
            txn.commit().await?;
            return Ok(Deleted::Before(Box::new(user)));
        }
        let now = nonce.now_ms;
        partner_user::Entity::update_many()
            .col_expr(partner_user::Column::DeletedAt, Expr::value(now))
            .filter(partner_user::Column::Id.eq(user.id.clone()))
            .exec(&txn)
            .await?;
        api_key::Entity::update_many()
            .col_expr(api_key::Column::RevokedAt, Expr::value(now))
            .filter(api_key::Column::EntityId.eq(user.entity_id.clone()))
            .filter(api_key::Column::RevokedAt.is_null())
            .exec(&txn)
            .await?;
        txn.commit().await?;
        user.deleted_at = Some(now);
        Ok(Deleted::Now(Box::new(user)))
    }

    pub async fn partner_user(&self, partner_id: &str, external_id: &str) -> Result<Option<partner_user::Model>, StoreError> {
        find_user(&self.db, partner_id, external_id).await
    }

    pub async fn partner_user_by_id(&self, id: &str) -> Result<Option<partner_user::Model>, StoreError> {
        Ok(partner_user::Entity::find_by_id(id.to_string()).one(&self.db).await?)
    }

    /// The partner user whose claim token has this SHA-256.
    pub async fn claim_link(&self, token_hash: &str) -> Result<Option<partner_user::Model>, StoreError> {
        Ok(partner_user::Entity::find().filter(partner_user::Column::ClaimTokenHash.eq(token_hash)).one(&self.db).await?)
    }

    /// A partner's users, in the order they were provisioned.
    pub async fn partner_users(&self, partner_id: &str) -> Result<Vec<partner_user::Model>, StoreError> {
        Ok(partner_user::Entity::find()
            .filter(partner_user::Column::PartnerId.eq(partner_id))
            .order_by_asc(partner_user::Column::CreatedAt)
            .order_by_asc(partner_user::Column::Id)
            .all(&self.db)
            .await?)
    }

    /// Takes an account over with a claim token (its SHA-256): single use, before it expires; the account gets the
    /// email and password hash.
    pub async fn claim(&self, token_hash: &str, email: &str, password_hash: &str, now_ms: i64) -> Result<Claimed, StoreError> {
        let txn = self.writer.begin().await?;
        let Some(mut user) = partner_user::Entity::find().filter(partner_user::Column::ClaimTokenHash.eq(token_hash)).one(&txn).await?
        else {
            return Ok(Claimed::Unknown);
        };
        if user.claimed_at.is_some() {
            return Ok(Claimed::Used);
        }
        if user.deleted_at.is_some() {
            return Ok(Claimed::Deleted);
        }
        if user.claim_expires_at <= now_ms {
            return Ok(Claimed::Expired(user.claim_expires_at));
        }
        let taken = partner_user::Entity::update_many()
            .col_expr(partner_user::Column::ClaimedAt, Expr::value(now_ms))
            .filter(partner_user::Column::Id.eq(user.id.clone()))
            .filter(partner_user::Column::ClaimedAt.is_null())
            .exec(&txn)
            .await?;
        if taken.rows_affected != 1 {
            return Ok(Claimed::Used);
        }
        let set = entity::Entity::update_many()
            .col_expr(entity::Column::Email, Expr::value(email))
            .col_expr(entity::Column::PasswordHash, Expr::value(password_hash))
            .filter(entity::Column::Id.eq(user.entity_id.clone()))
            .exec(&txn)
            .await;
        if let Err(e) = set {
            return match StoreError::from(e) {
                StoreError::Conflict(_) => Ok(Claimed::EmailTaken),
                other => Err(other),
            };
        }
        txn.commit().await?;
        user.claimed_at = Some(now_ms);
        Ok(Claimed::Now(Box::new(user)))
    }

    /// Calls recorded in the ledger (refunds are not calls) per account of a partner's users with
    /// `from_ms <= created_at < to_ms` (accounts without any are left out).
    pub async fn partner_calls(&self, partner_id: &str, from_ms: i64, to_ms: i64) -> Result<Vec<UserCalls>, StoreError> {
        let backend = self.db.get_database_backend();
        let (p1, p2, p3) = match backend {
            sea_orm::DbBackend::Postgres => ("$1", "$2", "$3"),
            _ => ("?", "?", "?"),
        };
        let sql = format!(
            r#"SELECT "t"."entity_id" AS "entity_id", COUNT(*) AS "calls" FROM "transactions" AS "t"
               JOIN "partner_users" AS "u" ON "u"."entity_id" = "t"."entity_id"
               WHERE "u"."partner_id" = {p1} AND "t"."created_at" >= {p2} AND "t"."created_at" < {p3} AND "t"."refund_of" IS NULL
               GROUP BY "t"."entity_id""#
        );
        let stmt = Statement::from_sql_and_values(backend, sql, [partner_id.into(), from_ms.into(), to_ms.into()]);
        Ok(UserCalls::find_by_statement(stmt).all(&self.db).await?)
    }

    /// The accounts with these ids.
    pub async fn entities(&self, ids: Vec<String>) -> Result<Vec<entity::Model>, StoreError> {
        let mut out = Vec::new();
        for chunk in ids.chunks(500) {
            out.extend(entity::Entity::find().filter(entity::Column::Id.is_in(chunk.to_vec())).all(&self.db).await?);
        }
        Ok(out)
    }
}

async fn find_user<C: ConnectionTrait>(conn: &C, partner_id: &str, external_id: &str) -> Result<Option<partner_user::Model>, StoreError> {
    Ok(partner_user::Entity::find()
        .filter(partner_user::Column::PartnerId.eq(partner_id))
        .filter(partner_user::Column::ExternalId.eq(external_id))
        .one(conn)
        .await?)
}

/// Uses up a webhook nonce (false: used before), forgetting the partner's nonces too old to be replayed.
async fn use_nonce(txn: &DatabaseTransaction, n: &Nonce<'_>) -> Result<bool, StoreError> {
    partner_nonce::Entity::delete_many()
        .filter(partner_nonce::Column::PartnerId.eq(n.partner_id))
        .filter(partner_nonce::Column::UsedAt.lt(n.forget_before_ms))
        .exec(txn)
        .await?;
    let row = partner_nonce::Model { partner_id: n.partner_id.to_string(), nonce: n.nonce.to_string(), used_at: n.now_ms };
    let inserted = partner_nonce::Entity::insert(partner_nonce::ActiveModel::from(row))
        .on_conflict(OnConflict::columns([partner_nonce::Column::PartnerId, partner_nonce::Column::Nonce]).do_nothing().to_owned())
        .exec_without_returning(txn)
        .await?;
    Ok(inserted == 1)
}

/// Records a partner user's first upgrade, if the account is one and this is its first: the time, and the partner's
/// revenue share as it stands now (later changes to the partner's rate apply to later upgrades only).
pub async fn record_first_upgrade<C: ConnectionTrait>(conn: &C, entity_id: &str, now_ms: i64) -> Result<(), StoreError> {
    let Some(user) = partner_user::Entity::find()
        .filter(partner_user::Column::EntityId.eq(entity_id))
        .filter(partner_user::Column::FirstUpgradeAt.is_null())
        .one(conn)
        .await?
    else {
        return Ok(());
    };
    let Some(p) = partner::Entity::find_by_id(user.partner_id.clone()).one(conn).await? else { return Ok(()) };
    partner_user::Entity::update_many()
        .col_expr(partner_user::Column::FirstUpgradeAt, Expr::value(now_ms))
        .col_expr(partner_user::Column::LockedRevsharePct, Expr::value(p.revshare_pct))
        .filter(partner_user::Column::Id.eq(user.id))
        .filter(partner_user::Column::FirstUpgradeAt.is_null())
        .exec(conn)
        .await?;
    Ok(())
}
