//! `levy rules import-sst`: a state's Streamlined Sales Tax rate and boundary files into its local tax data
//! (`local/<xx>.sst.yaml`, `local/<xx>.sst.csv`), then the whole rules directory checked.

use std::collections::HashMap;
use std::path::Path;

use crate::rules::diag::SourceMap;
use crate::rules::schema::{state_index, STATES};
use crate::rules::{csv, geo, sst};

/// Reads `geo/places.csv`: the Census name of each incorporated place, by (state, place FIPS).
fn places(dir: &Path) -> Result<HashMap<(usize, String), String>, String> {
    let mut diags = vec![];
    let table = csv::read(&dir.join("geo").join("places.csv"), &["state", "place", "name"], &mut SourceMap::default(), &mut diags)
        .ok_or_else(|| format!("cannot read {}: {:?}", dir.join("geo/places.csv").display(), diags.first().map(|d| &d.message)))?;
    Ok(table.records().filter_map(|r| Some(((state_index(r.field(0))?, r.field(1).to_string()), r.field(2).replace(';', ",")))).collect())
}

/// Reads a districts file: `code,name,counties,cite`.
fn districts(path: &Path) -> Result<HashMap<String, sst::District>, String> {
    let mut diags = vec![];
    let table = csv::read(path, &["code", "name", "counties", "cite"], &mut SourceMap::default(), &mut diags)
        .ok_or_else(|| format!("cannot read {}: {}", path.display(), diags.first().map_or(String::new(), |d| d.message.clone())))?;
    if let Some(d) = diags.first() {
        return Err(format!("{}: {}", path.display(), d.message));
    }
    Ok(table
        .records()
        .map(|r| {
            let d = sst::District {
                name: r.field(1).to_string(),
                counties: r.field(2).split_whitespace().map(str::to_string).collect(),
                cite: r.field(3).replace(';', ","),
            };
            (r.field(0).to_string(), d)
        })
        .collect())
}

/// The command: exit 0 when the files were written and the directory checks clean; 1 when it does not; 2 when a
/// file cannot be read or is not in the format.
pub fn import_sst(rate_file: &Path, boundary_file: Option<&Path>, into: &Path, districts_file: Option<&Path>) -> u8 {
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let run = || -> Result<sst::Imported, String> {
        let rates = read(rate_file)?;
        let boundaries = boundary_file.map(read).transpose()?;
        let mut diags = vec![];
        let geo = geo::load(&into.join("geo"), &mut SourceMap::default(), &mut diags);
        if let Some(d) = diags.first() {
            return Err(format!("the geography in {} does not read: {}", into.join("geo").display(), d.message));
        }
        let places = places(into)?;
        let districts = districts_file.map(districts).transpose()?.unwrap_or_default();
        let (rate_label, boundary_label) = (sst::file_label(rate_file), boundary_file.map(sst::file_label).unwrap_or_default());
        sst::import(&sst::Source {
            rates: &rates,
            rate_label: &rate_label,
            boundaries: boundaries.as_deref().map(|b| (b, boundary_label.as_str())),
            geo: &geo,
            places: &places,
            districts: &districts,
            today: chrono::Utc::now().date_naive(),
        })
    };
    let imported = match run() {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let local = into.join("local");
    let stem = STATES[imported.state].to_lowercase();
    let yaml = local.join(format!("{stem}.sst.yaml"));
    let csv = local.join(format!("{stem}.sst.csv"));
    let written = std::fs::write(&yaml, &imported.yaml).and_then(|()| match &imported.csv {
        Some(text) => std::fs::write(&csv, text),
        None if csv.exists() => std::fs::remove_file(&csv),
        None => Ok(()),
    });
    if let Err(e) = written {
        eprintln!("error: cannot write into {}: {e}", local.display());
        return 2;
    }
    println!(
        "{}: {} counties, {} cities, {} special districts written to {}{}",
        STATES[imported.state],
        imported.counties,
        imported.cities,
        imported.districts,
        yaml.display(),
        imported.csv.as_ref().map(|_| format!(", {} boundary rows to {}", imported.rows, csv.display())).unwrap_or_default()
    );
    for s in &imported.skipped {
        println!("  left out: {s}");
    }
    super::check(into)
}
