//! The merge itself: [`Merger`] walks the patch over the original, honouring every
//! `$patch` directive.

use super::*;

/// State of one merge: the list-strategy callback plus where we are in the document.
pub(super) struct Merger<'a> {
    /// Decides how the list at a field path merges.
    pub(super) strategy: &'a dyn Fn(&[&str]) -> ListStrategy,
    /// Field names from the root to the value being merged; list positions are left out
    /// because the strategy table is keyed by field names only.
    pub(super) path: Vec<String>,
    /// Current nesting of maps and lists, checked against [`MAX_DEPTH`].
    pub(super) depth: usize,
}

impl Merger<'_> {
    /// The current path for error messages.
    fn path_string(&self) -> String {
        if self.path.is_empty() {
            "(root)".to_owned()
        } else {
            self.path.join(".")
        }
    }

    /// The strategy of the list at the current path.
    fn list_strategy(&self) -> ListStrategy {
        let segments: Vec<&str> = self.path.iter().map(String::as_str).collect();
        (self.strategy)(&segments)
    }

    /// Steps one level deeper, refusing to go past [`MAX_DEPTH`].
    fn enter(&mut self) -> Result<(), StrategicMergeError> {
        if self.depth >= MAX_DEPTH {
            return Err(StrategicMergeError::TooDeep {
                path: self.path_string(),
                max: MAX_DEPTH,
            });
        }
        self.depth += 1;
        Ok(())
    }

    /// Steps back out after [`Merger::enter`].
    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Error for a directive value of the wrong shape at the current path.
    fn invalid_directive(&self, directive: &str, expected: &'static str) -> StrategicMergeError {
        StrategicMergeError::InvalidDirectiveValue {
            path: self.path_string(),
            directive: directive.to_owned(),
            expected,
        }
    }

    /// Error for a `$patch` value that is neither `replace` nor `delete`.
    fn invalid_patch_value(&self, value: &Value) -> StrategicMergeError {
        StrategicMergeError::InvalidPatchValue {
            path: self.path_string(),
            value: value.to_string(),
        }
    }

    /// Merges a patch value into an optional original value. `None` in the result means
    /// the field must be removed (a `null` patch, or a map carrying `$patch: delete`).
    fn merge_value(
        &mut self,
        original: Option<Value>,
        patch: &Value,
    ) -> Result<Option<Value>, StrategicMergeError> {
        match patch {
            Value::Null => Ok(None),
            Value::Object(patch) => {
                // A type change (e.g. a string becoming a map) replaces, like upstream;
                // merging into an empty map still resolves the patch's directives.
                let base = match original {
                    Some(Value::Object(fields)) => fields,
                    _ => Map::new(),
                };
                Ok(self.merge_map(base, patch)?.map(Value::Object))
            }
            Value::Array(patch) => {
                let base = match original {
                    Some(Value::Array(items)) => Some(items),
                    _ => None,
                };
                Ok(Some(Value::Array(self.merge_list(base, patch)?)))
            }
            scalar => Ok(Some(scalar.clone())),
        }
    }

    /// A patch value with nothing to merge into, resolved as if merged into emptiness.
    /// `null` list elements survive as `null`, since they are values, not deletions.
    fn fresh_item(&mut self, item: &Value) -> Result<Option<Value>, StrategicMergeError> {
        if item.is_null() {
            return Ok(Some(Value::Null));
        }
        self.merge_value(None, item)
    }

    /// Merges a patch map into an original map; `None` means `$patch: delete`.
    pub(super) fn merge_map(
        &mut self,
        original: Map<String, Value>,
        patch: &Map<String, Value>,
    ) -> Result<Option<Map<String, Value>>, StrategicMergeError> {
        self.enter()?;
        let result = self.merge_map_entered(original, patch);
        self.leave();
        result
    }

    /// [`Merger::merge_map`] once the depth is accounted for.
    fn merge_map_entered(
        &mut self,
        original: Map<String, Value>,
        patch: &Map<String, Value>,
    ) -> Result<Option<Map<String, Value>>, StrategicMergeError> {
        // `$patch` acts on the map as a whole, so it wins over everything else in it.
        if let Some(directive) = patch.get(PATCH_KEY) {
            return match directive.as_str() {
                Some("replace") => self.merge_fields(Map::new(), patch).map(Some),
                Some("delete") => Ok(None),
                _ => Err(self.invalid_patch_value(directive)),
            };
        }
        self.merge_fields(original, patch).map(Some)
    }

    /// Merges every field of `patch` (ignoring `$patch`, already handled) into `original`.
    ///
    /// The order mirrors the API server: `$retainKeys` first (it prunes the original),
    /// then lists that have a `$setElementOrder`, then all other fields, and finally
    /// `$deleteFromPrimitiveList` so deletions see the merged list.
    fn merge_fields(
        &mut self,
        mut original: Map<String, Value>,
        patch: &Map<String, Value>,
    ) -> Result<Map<String, Value>, StrategicMergeError> {
        let mut retain_keys = None;
        let mut element_orders = Vec::new();
        let mut deletions = Vec::new();
        for (key, value) in patch {
            if !key.starts_with('$') || key == PATCH_KEY {
                continue;
            }
            if key == RETAIN_KEYS_KEY {
                retain_keys = Some(value);
            } else if let Some(field) = key
                .strip_prefix(SET_ELEMENT_ORDER_PREFIX)
                .filter(|field| !field.is_empty())
            {
                element_orders.push((key.as_str(), field, value));
            } else if let Some(field) = key
                .strip_prefix(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
                .filter(|field| !field.is_empty())
            {
                deletions.push((key.as_str(), field, value));
            } else {
                return Err(StrategicMergeError::UnknownDirective {
                    path: self.path_string(),
                    directive: key.clone(),
                });
            }
        }

        if let Some(names) = retain_keys {
            self.apply_retain_keys(&mut original, patch, names)?;
        }

        let mut ordered_fields = HashSet::new();
        for (directive, field, order) in element_orders {
            if self.apply_element_order(&mut original, patch, directive, field, order)? {
                ordered_fields.insert(field);
            }
        }

        for (key, value) in patch {
            if key.starts_with('$') || ordered_fields.contains(key.as_str()) {
                continue;
            }
            if value.is_null() {
                remove_key(&mut original, key);
                continue;
            }
            // Taking the value out (leaving null in its slot) lets the merge own it
            // without a clone, and re-inserting keeps the field's position.
            let current = original.get_mut(key).map(Value::take);
            self.path.push(key.clone());
            let merged = self.merge_value(current, value);
            self.path.pop();
            match merged? {
                Some(value) => {
                    original.insert(key.clone(), value);
                }
                None => remove_key(&mut original, key),
            }
        }

        for (directive, field, values) in deletions {
            let Value::Array(values) = values else {
                return Err(self.invalid_directive(directive, "a list of values to remove"));
            };
            // Deleting from a list that is not there leaves nothing to do.
            if let Some(Value::Array(items)) = original.get_mut(field) {
                let doomed: HashSet<Ident> = values.iter().map(ident_of).collect();
                items.retain(|item| !doomed.contains(&ident_of(item)));
            }
        }
        Ok(original)
    }

    /// `$retainKeys`: drops original fields not listed. The patch may not set unlisted
    /// fields itself, since they would be dropped too; upstream rejects that as well.
    fn apply_retain_keys(
        &self,
        original: &mut Map<String, Value>,
        patch: &Map<String, Value>,
        names: &Value,
    ) -> Result<(), StrategicMergeError> {
        let Value::Array(names) = names else {
            return Err(self.invalid_directive(RETAIN_KEYS_KEY, "a list of field names"));
        };
        let mut keep = HashSet::new();
        for name in names {
            let Some(name) = name.as_str() else {
                return Err(self.invalid_directive(RETAIN_KEYS_KEY, "a list of field names"));
            };
            keep.insert(name);
        }
        for (key, value) in patch {
            if key.starts_with('$') || value.is_null() {
                continue;
            }
            if !keep.contains(key.as_str()) {
                return Err(StrategicMergeError::RetainKeysViolation {
                    path: self.path_string(),
                    field: key.clone(),
                });
            }
        }
        original.retain(|key, _| keep.contains(key.as_str()));
        Ok(())
    }

    /// `$setElementOrder/<field>`: merges the field's list (if the patch has one) and then
    /// fixes its order. Returns whether the field was handled; a `null` patch value is left
    /// to the ordinary field loop, which deletes it.
    fn apply_element_order(
        &mut self,
        original: &mut Map<String, Value>,
        patch: &Map<String, Value>,
        directive: &str,
        field: &str,
        order: &Value,
    ) -> Result<bool, StrategicMergeError> {
        let Value::Array(order) = order else {
            return Err(self.invalid_directive(directive, "a list"));
        };
        let patch_list = match patch.get(field) {
            None => None,
            Some(Value::Array(items)) => Some(items.as_slice()),
            Some(Value::Null) => return Ok(false),
            Some(_) => {
                return Err(self.invalid_directive(directive, "the patched field to be a list"));
            }
        };
        let current = original.get_mut(field).map(Value::take);
        self.path.push(field.to_owned());
        let result = self.merge_in_element_order(current, patch_list, order);
        self.path.pop();
        if let Some(value) = result? {
            original.insert(field.to_owned(), value);
        }
        Ok(true)
    }

    /// Merges `patch_list` into `current` and orders the result by `order`; `None` when
    /// neither side has the field, so the directive alone does not create it.
    fn merge_in_element_order(
        &mut self,
        current: Option<Value>,
        patch_list: Option<&[Value]>,
        order: &[Value],
    ) -> Result<Option<Value>, StrategicMergeError> {
        let original_list = match (current, patch_list) {
            (None, None) => return Ok(None),
            (Some(Value::Array(items)), _) => items,
            // Nothing to merge and nothing list-like to reorder.
            (Some(other), None) => return Ok(Some(other)),
            (_, Some(_)) => Vec::new(),
        };
        let identity = match self.list_strategy() {
            // Without merge semantics the patch list stands as sent; kubectl never orders
            // such lists, so the directive is ignored rather than guessed at.
            ListStrategy::Replace => {
                let list = match patch_list {
                    Some(patch_list) => self.merge_list(Some(original_list), patch_list)?,
                    None => original_list,
                };
                return Ok(Some(Value::Array(list)));
            }
            ListStrategy::MergeByKey(key) => Identity::Key(key),
            ListStrategy::MergePrimitives => Identity::Value,
        };
        let mut order_ids = Vec::with_capacity(order.len());
        for item in order {
            order_ids.push(self.required_ident(identity, item)?);
        }
        if let Some(patch_list) = patch_list {
            self.check_patch_follows_order(identity, patch_list, &order_ids)?;
        }
        let server_order = first_positions(original_list.iter().map(|item| identity.of(item)));
        let merged = match patch_list {
            Some(patch_list) => self.merge_list(Some(original_list), patch_list)?,
            None => original_list,
        };
        let wanted = first_positions(order_ids.into_iter().map(Some));
        Ok(Some(Value::Array(normalize_order(
            merged,
            identity,
            &wanted,
            &server_order,
        ))))
    }

    /// The identity of a patch-side item, which must have one.
    fn required_ident(
        &self,
        identity: Identity,
        item: &Value,
    ) -> Result<Ident, StrategicMergeError> {
        match identity {
            Identity::Value => Ok(ident_of(item)),
            Identity::Key(key) => {
                let Value::Object(fields) = item else {
                    return Err(StrategicMergeError::ItemNotObject {
                        path: self.path_string(),
                        key,
                        found: kind_name(item),
                    });
                };
                fields
                    .get(key)
                    .map(ident_of)
                    .ok_or_else(|| StrategicMergeError::MissingMergeKey {
                        path: self.path_string(),
                        key,
                    })
            }
        }
    }

    /// Upstream requires every non-directive patch item to appear in `$setElementOrder`,
    /// in the same relative order; anything else means the two were built from different
    /// documents.
    fn check_patch_follows_order(
        &self,
        identity: Identity,
        patch_list: &[Value],
        order_ids: &[Ident],
    ) -> Result<(), StrategicMergeError> {
        let mut remaining = order_ids.iter();
        for item in patch_list {
            if self.list_directive(item)?.is_some() {
                continue;
            }
            let id = self.required_ident(identity, item)?;
            if !remaining.by_ref().any(|ordered| *ordered == id) {
                return Err(StrategicMergeError::ElementOrderMismatch {
                    path: self.path_string(),
                });
            }
        }
        Ok(())
    }

    /// Reads a `$patch` list element, if `item` is one.
    fn list_directive(&self, item: &Value) -> Result<Option<ListDirective>, StrategicMergeError> {
        let Some(directive) = item.as_object().and_then(|fields| fields.get(PATCH_KEY)) else {
            return Ok(None);
        };
        match directive.as_str() {
            Some("replace") => Ok(Some(ListDirective::Replace)),
            Some("delete") => Ok(Some(ListDirective::Delete)),
            _ => Err(self.invalid_patch_value(directive)),
        }
    }

    /// Merges a patch list into an optional original list, per the field's strategy.
    fn merge_list(
        &mut self,
        original: Option<Vec<Value>>,
        patch: &[Value],
    ) -> Result<Vec<Value>, StrategicMergeError> {
        self.enter()?;
        let result = match self.list_strategy() {
            ListStrategy::Replace => self.replace_list(patch),
            ListStrategy::MergePrimitives => self.merge_primitive_list(original, patch),
            ListStrategy::MergeByKey(key) => self.merge_keyed_list(original, patch, key),
        };
        self.leave();
        result
    }

    /// An atomic list: the patch list wins. Directive elements have nothing to act on
    /// here, so they are dropped instead of being stored as data.
    fn replace_list(&mut self, patch: &[Value]) -> Result<Vec<Value>, StrategicMergeError> {
        let mut out = Vec::with_capacity(patch.len());
        for item in patch {
            if self.list_directive(item)?.is_some() {
                continue;
            }
            if let Some(value) = self.fresh_item(item)? {
                out.push(value);
            }
        }
        Ok(out)
    }

    /// A set of primitives: union, ordered like the API server (see [`normalize_order`]).
    fn merge_primitive_list(
        &mut self,
        original: Option<Vec<Value>>,
        patch: &[Value],
    ) -> Result<Vec<Value>, StrategicMergeError> {
        let mut replace = false;
        let mut additions = Vec::with_capacity(patch.len());
        for item in patch {
            match self.list_directive(item)? {
                Some(ListDirective::Replace) => {
                    replace = true;
                    continue;
                }
                Some(ListDirective::Delete) => {
                    return Err(StrategicMergeError::InvalidListDirective {
                        path: self.path_string(),
                        reason: "`$patch: delete` needs a merge key; remove primitive values \
                                 with `$deleteFromPrimitiveList/<field>`",
                    });
                }
                None => {}
            }
            if item.is_object() || item.is_array() {
                return Err(StrategicMergeError::ItemNotPrimitive {
                    path: self.path_string(),
                    found: kind_name(item),
                });
            }
            additions.push(item);
        }
        if replace {
            return Ok(additions.into_iter().cloned().collect());
        }
        let original = original.unwrap_or_default();
        let server_order = first_positions(original.iter().map(|item| Some(ident_of(item))));
        let wanted = first_positions(additions.iter().map(|item| Some(ident_of(item))));
        // Set semantics: the first occurrence of each value survives, as upstream dedupes.
        let mut seen = HashSet::new();
        let mut merged = Vec::with_capacity(original.len() + additions.len());
        for item in original.into_iter().chain(additions.into_iter().cloned()) {
            if seen.insert(ident_of(&item)) {
                merged.push(item);
            }
        }
        Ok(normalize_order(
            merged,
            Identity::Value,
            &wanted,
            &server_order,
        ))
    }

    /// A list of objects identified by `key`: deletions, then in-place merges and
    /// additions, then ordering like the API server (see [`normalize_order`]).
    fn merge_keyed_list(
        &mut self,
        original: Option<Vec<Value>>,
        patch: &[Value],
        key: &'static str,
    ) -> Result<Vec<Value>, StrategicMergeError> {
        let identity = Identity::Key(key);
        let mut replace = false;
        let mut doomed = HashSet::new();
        let mut items = Vec::with_capacity(patch.len());
        for item in patch {
            let Value::Object(fields) = item else {
                return Err(StrategicMergeError::ItemNotObject {
                    path: self.path_string(),
                    key,
                    found: kind_name(item),
                });
            };
            match self.list_directive(item)? {
                Some(ListDirective::Replace) => replace = true,
                Some(ListDirective::Delete) => {
                    doomed.insert(self.required_ident(identity, item)?);
                }
                None => items.push((self.required_ident(identity, item)?, fields)),
            }
        }

        if replace {
            let mut out = Vec::with_capacity(items.len());
            for (_, fields) in items {
                if let Some(fields) = self.merge_map(Map::new(), fields)? {
                    out.push(Value::Object(fields));
                }
            }
            return Ok(out);
        }

        let mut merged = original.unwrap_or_default();
        if !doomed.is_empty() {
            merged.retain(|item| !identity.of(item).is_some_and(|id| doomed.contains(&id)));
        }
        let server_order = first_positions(merged.iter().map(|item| identity.of(item)));
        // Where each key lives in `merged`; the first item with a key is the one patched,
        // and items appended below become targets for later duplicates in the patch.
        let mut slots = server_order.clone();
        for (id, fields) in &items {
            match slots
                .get(id)
                .copied()
                .and_then(|index| merged.get_mut(index))
            {
                Some(slot) => {
                    let base = match slot.take() {
                        Value::Object(existing) => existing,
                        _ => Map::new(),
                    };
                    *slot = Value::Object(self.merge_map(base, fields)?.unwrap_or_default());
                }
                None => {
                    let fresh = self.merge_map(Map::new(), fields)?.unwrap_or_default();
                    slots.insert(id.clone(), merged.len());
                    merged.push(Value::Object(fresh));
                }
            }
        }
        let wanted = first_positions(items.iter().map(|(id, _)| Some(id.clone())));
        Ok(normalize_order(merged, identity, &wanted, &server_order))
    }
}
