//! Trades, lots, dispositions and positions. Every read a trade needs goes through an index:
//! the open lots of one asset in acquisition order (FIFO from the front, LIFO from the back, a
//! page at a time), the lots acquired inside a wash-sale window, and the open wash-sale losses of
//! one asset by sale date.

use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, Condition, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set};

use super::entity::{disposition, lot, position, trade};
use super::{Store, StoreError};

/// Filters of GET /api/v1/trades.
#[derive(Clone, Debug, Default)]
pub struct TradeFilter {
    pub asset_symbol: Option<String>,
    pub trade_type: Option<String>,
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
    pub limit: u64,
    pub offset: u64,
}

impl Store {
    /// Creates the account's position in the asset if need be and takes it for this transaction
    /// (an upsert, so it holds the row lock on PostgreSQL and the write lock on SQLite): trades
    /// of one asset are applied one after another, whichever instance receives them.
    pub async fn lock_position<C: ConnectionTrait>(
        conn: &C,
        entity_id: &str,
        symbol: &str,
        now_ms: i64,
    ) -> Result<position::Model, StoreError> {
        let zero = || Set("0".to_string());
        let row = position::ActiveModel {
            entity_id: Set(entity_id.to_string()),
            asset_symbol: Set(symbol.to_string()),
            asset_class: Set(None),
            asset_name: Set(None),
            held_quantity: zero(),
            open_lots: Set(0),
            remaining_basis: zero(),
            realized_short_term: zero(),
            realized_long_term: zero(),
            wash_disallowed: zero(),
            buys: Set(0),
            sells: Set(0),
            last_sell_at: Set(None),
            updated_at: Set(now_ms),
            version: Set(0),
        };
        let model = position::Entity::insert(row)
            .on_conflict(
                OnConflict::columns([position::Column::EntityId, position::Column::AssetSymbol])
                    .value(position::Column::Version, Expr::col((position::Entity, position::Column::Version)).add(1))
                    .to_owned(),
            )
            .exec_with_returning(conn)
            .await?;
        Ok(model)
    }

    /// Up to `limit` open lots of an asset acquired at or before `until_ms`, oldest first (or
    /// newest first), after the cursor (acquired_at, id) of the previous page.
    pub async fn open_lots_page<C: ConnectionTrait>(
        conn: &C,
        entity_id: &str,
        symbol: &str,
        until_ms: i64,
        newest_first: bool,
        after: Option<(i64, String)>,
        limit: u64,
    ) -> Result<Vec<lot::Model>, StoreError> {
        use lot::Column as L;
        let mut q = lot::Entity::find()
            .filter(L::EntityId.eq(entity_id))
            .filter(L::AssetSymbol.eq(symbol))
            .filter(L::Open.eq(true))
            .filter(L::AcquiredAt.lte(until_ms));
        if let Some((at, id)) = after {
            q = q.filter(if newest_first {
                Condition::any().add(L::AcquiredAt.lt(at)).add(Condition::all().add(L::AcquiredAt.eq(at)).add(L::Id.lt(id)))
            } else {
                Condition::any().add(L::AcquiredAt.gt(at)).add(Condition::all().add(L::AcquiredAt.eq(at)).add(L::Id.gt(id)))
            });
        }
        q = if newest_first {
            q.order_by_desc(L::AcquiredAt).order_by_desc(L::Id)
        } else {
            q.order_by_asc(L::AcquiredAt).order_by_asc(L::Id)
        };
        Ok(q.limit(limit).all(conn).await?)
    }

    /// A lot of this account, by id.
    pub async fn lot<C: ConnectionTrait>(conn: &C, entity_id: &str, id: &str) -> Result<Option<lot::Model>, StoreError> {
        Ok(lot::Entity::find_by_id(id.to_string()).filter(lot::Column::EntityId.eq(entity_id)).one(conn).await?)
    }

    /// Open lots of an asset acquired in [from_ms, to_ms] that are not already a replacement, in acquisition order.
    pub async fn replacement_lots<C: ConnectionTrait>(
        conn: &C,
        entity_id: &str,
        symbol: &str,
        from_ms: i64,
        to_ms: i64,
    ) -> Result<Vec<lot::Model>, StoreError> {
        use lot::Column as L;
        Ok(lot::Entity::find()
            .filter(L::EntityId.eq(entity_id))
            .filter(L::AssetSymbol.eq(symbol))
            .filter(L::Open.eq(true))
            .filter(L::AcquiredAt.between(from_ms, to_ms))
            .filter(L::ReplacementFor.is_null())
            .order_by_asc(L::AcquiredAt)
            .order_by_asc(L::Id)
            .all(conn)
            .await?)
    }

    /// Losses of an asset sold in [from_ms, to_ms] under the wash-sale rule with units not yet replaced, by sale.
    pub async fn open_wash_losses<C: ConnectionTrait>(
        conn: &C,
        entity_id: &str,
        symbol: &str,
        from_ms: i64,
        to_ms: i64,
    ) -> Result<Vec<disposition::Model>, StoreError> {
        use disposition::Column as D;
        Ok(disposition::Entity::find()
            .filter(D::EntityId.eq(entity_id))
            .filter(D::AssetSymbol.eq(symbol))
            .filter(D::WashOpen.eq(true))
            .filter(D::SoldAt.between(from_ms, to_ms))
            .order_by_asc(D::SoldAt)
            .order_by_asc(D::Id)
            .all(conn)
            .await?)
    }

    /// The account's trades, newest trade date first.
    pub async fn list_trades(&self, entity_id: &str, f: &TradeFilter) -> Result<Vec<trade::Model>, StoreError> {
        use trade::Column as T;
        let mut q = trade::Entity::find().filter(T::EntityId.eq(entity_id));
        if let Some(s) = &f.asset_symbol {
            q = q.filter(T::AssetSymbol.eq(s.as_str()));
        }
        if let Some(t) = &f.trade_type {
            q = q.filter(T::TradeType.eq(t.as_str()));
        }
        if let Some(s) = f.since_ms {
            q = q.filter(T::TradeDate.gte(s));
        }
        if let Some(u) = f.until_ms {
            q = q.filter(T::TradeDate.lte(u));
        }
        Ok(q.order_by_desc(T::TradeDate)
            .order_by_desc(T::CreatedAt)
            .order_by_desc(T::Id)
            .offset(f.offset)
            .limit(f.limit)
            .all(&self.db)
            .await?)
    }

    /// The account's positions (one per asset traded), by symbol.
    pub async fn positions(&self, entity_id: &str, symbol: Option<&str>) -> Result<Vec<position::Model>, StoreError> {
        let mut q = position::Entity::find().filter(position::Column::EntityId.eq(entity_id));
        if let Some(s) = symbol {
            q = q.filter(position::Column::AssetSymbol.eq(s));
        }
        Ok(q.order_by_asc(position::Column::AssetSymbol).all(&self.db).await?)
    }

    /// Every disposition of a tax year, in the order sold.
    pub async fn dispositions_for_year(&self, entity_id: &str, year: i32) -> Result<Vec<disposition::Model>, StoreError> {
        use disposition::Column as D;
        Ok(disposition::Entity::find()
            .filter(D::EntityId.eq(entity_id))
            .filter(D::TaxYear.eq(year))
            .order_by_asc(D::SoldAt)
            .order_by_asc(D::Id)
            .all(&self.db)
            .await?)
    }
}
