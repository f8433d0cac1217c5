"""Worked examples for the built-in tools: `EXAMPLES`, which every planner prompt shows, and
`BANK`, of which a planner with `similar_examples` shows each question those worded most like
it (`planweave.similar`; off by default).

Small models copy the shape of what they are shown, and one prompt cannot show every shape:
the bank covers the compositions users ask (a lookup on the largest of several, a lookup on
what two lists share, counts and lists of those past a mark, yes/no by membership, equality or
a sign, a chain through a city's country or a country's capital, shares and percentages,
growth, temperatures on two scales and their differences, prices per unit, densities in other
units, groups by region, orderings), each a plan that runs on the real tools
(tests/test_builtin.py).
None is an evaluation question: the held-out shapes batches are written by others who do not
read this file.
"""

from __future__ import annotations

__all__ = ["BANK", "EXAMPLES"]

# Worked plans for the planner prompt.  Small models copy the shape of what they are shown, so
# these cover the common shapes: independent lookups, lookups feeding the calculator, a lookup
# per item of a list result (a fan-out), a city.  Each ends with its answer as a fill-in
# (`join("... ${3} ...")`); where plan answers are off the planner shows `join()` instead.
# The evaluation questions (benchmarks/local_eval.py) are kept out of them.
EXAMPLES = [
    """Question: Which country has the larger area, Chile or Peru?
Thought: The two areas are independent lookups; rank names the larger.
1. country_info("Chile", field="area_km2")
2. country_info("Peru", field="area_km2")
3. rank(["Chile", "Peru"], [$1, $2])
4. join("${3.largest} has the larger area: ${3.value} km².")
<END_OF_PLAN>""",
    """Question: Which has more people per square kilometre, Uruguay or Paraguay, and by how much?
Thought: People per square kilometre is the population divided by the area, for each country.
1. country_info("Uruguay", field="population")
2. country_info("Uruguay", field="area_km2")
3. country_info("Paraguay", field="population")
4. country_info("Paraguay", field="area_km2")
5. calculator("${1} / ${2}")
6. calculator("${3} / ${4}")
7. rank(["Uruguay", "Paraguay"], [$5, $6])
8. calculator("abs(${5} - ${6})")
9. join("${7.largest} has more people per square kilometre, by ${8} people per km².")
<END_OF_PLAN>""",
    # A chain: a city's country comes from city_info, and that result is the next argument.
    """Question: What is the capital of the country Lyon is in?
1. city_info("Lyon", field="country")
2. country_info($1, field="capital")
3. join("${2}, the capital of ${1}.")
<END_OF_PLAN>""",
    # A count is the length of a list result (the 1.5B model ranked the list instead).
    """Question: How many official languages does Switzerland have?
1. country_info("Switzerland", field="languages")
2. calculator("len(${1})")
3. join("Switzerland has ${2} official languages: ${1}.")
<END_OF_PLAN>""",
    # A fan-out: the list is known only once task 1 has run, so one plan still covers it.
    """Question: How many countries border Belgium, and what is their total population?
Thought: Each neighbour's population is looked up once the neighbours are known, all at once.
1. country_info("Belgium", field="neighbours")
2. country_info($1[*], field="population")
3. calculator("len(${1})")
4. calculator("sum(${2})")
5. join("${3} countries border Belgium (${1}); together they have ${4} people.")
<END_OF_PLAN>""",
    # One line: the question is written on one line in the prompt.
    "Question: How many times more people live in Osaka than in Kyoto, and what percentage of"
    """ the two cities' people live in Osaka?
1. city_info("Osaka", field="population")
2. city_info("Kyoto", field="population")
3. calculator("${1} / ${2}")
4. calculator("${1} / (${1} + ${2}) * 100")
5. join("${3} times as many people live in Osaka as in Kyoto; ${4} % of the two live in Osaka.")
<END_OF_PLAN>""",
    # ReAct transcripts with the tools' real observations and real answers (a placeholder
    # answer was copied literally by the 1.5B model).
    """Question: Which country has the larger area, Chile or Peru?
Thought: I need the area of Chile first.
Action: country_info("Chile", field="area_km2")
Observation: 756102
Thought: Now the area of Peru.
Action: country_info("Peru", field="area_km2")
Observation: 1285216
Thought: 1285216 is more than 756102, so Peru is larger.
Action: Finish(Peru is larger: 1,285,216 km² against 756,102 km² for Chile.)""",
    """Question: How many times more people live in Osaka than in Kyoto?
Thought: I need the population of Osaka.
Action: city_info("Osaka", field="population")
Observation: 2753862
Thought: Now the population of Kyoto.
Action: city_info("Kyoto", field="population")
Observation: 1463723
Thought: Divide Osaka's population by Kyoto's.
Action: calculator("${1} / ${2}")
Observation: 1.88141
Thought: The ratio answers the question.
Action: Finish(About 1.88 times as many: 2,753,862 people in Osaka against 1,463,723 in Kyoto.)""",
]


BANK = [
    """Question: What language is spoken in whichever of Chile, Peru and Bolivia has most people?
Thought: Rank the three populations, then look up the languages of the one ranked largest.
1. country_info("Chile", field="population")
2. country_info("Peru", field="population")
3. country_info("Bolivia", field="population")
4. rank(["Chile", "Peru", "Bolivia"], [$1, $2, $3])
5. country_info($4.largest, field="languages")
6. join("${4.largest} has the most people; its languages are ${5}.")
<END_OF_PLAN>""",
    """Question: Which country borders both France and Spain, and what is its capital?
Thought: The neighbours they share are the common items of the two lists; then each one's capital.
1. country_info("France", field="neighbours")
2. country_info("Spain", field="neighbours")
3. calculator("common(${1}, ${2})")
4. country_info($3[*], field="capital")
5. join("${3} borders both; its capital is ${4}.")
<END_OF_PLAN>""",
    """Question: How many of Norway, Sweden, Denmark and Finland have more than 5.5 million people?
Thought: Rank the populations with above= the threshold: it lists and counts those above it.
1. country_info("Norway", field="population")
2. country_info("Sweden", field="population")
3. country_info("Denmark", field="population")
4. country_info("Finland", field="population")
5. rank(["Norway", "Sweden", "Denmark", "Finland"], [$1, $2, $3, $4], above=5500000)
6. join("${5.count_above} of them have more than 5.5 million people: ${5.above}.")
<END_OF_PLAN>""",
    """Question: Does Austria border Hungary?
1. country_info("Austria", field="neighbours")
2. calculator("\\"Hungary\\" in ${1}")
3. join()
<END_OF_PLAN>""",
    """Question: Do Portugal and Brazil pay with the same currency?
1. country_info("Portugal", field="currencies")
2. country_info("Brazil", field="currencies")
3. calculator("${1} == ${2}")
4. join()
<END_OF_PLAN>""",
    """Question: What money do people use in the city of Porto?
Thought: A city's country comes from city_info; the currency is the country's.
1. city_info("Porto", field="country")
2. country_info($1, field="currency_names")
3. join("Porto is in ${1}, which pays with the ${2}.")
<END_OF_PLAN>""",
    """Question: How many people live in the capital of Kenya?
1. country_info("Kenya", field="capital")
2. city_info($1, field="population")
3. join("${2} people live in ${1}, the capital of Kenya.")
<END_OF_PLAN>""",
    """Question: By what percentage does Germany's population exceed France's?
Thought: The excess as a percentage of France's population.
1. country_info("Germany", field="population")
2. country_info("France", field="population")
3. calculator("(${1} - ${2}) / ${2} * 100")
4. join("Germany's population exceeds France's by ${3} %.")
<END_OF_PLAN>""",
    """Question: It is 30 degrees Celsius in Seville. What is that in Fahrenheit?
1. convert_units(30, "celsius", "fahrenheit")
2. join("30 °C is ${1} °F.")
<END_OF_PLAN>""",
    """Question: Which is colder, Oslo at -3 °C or Boston at 25 °F?
Thought: Put both temperatures on one scale, then rank them.
1. convert_units(25, "fahrenheit", "celsius")
2. rank(["Oslo", "Boston"], [-3, $1], order="smallest")
3. join("${2.smallest} is colder: Boston's 25 °F is ${1} °C.")
<END_OF_PLAN>""",
    """Question: What is the area of Belgium in square miles?
1. country_info("Belgium", field="area_km2")
2. convert_units($1, "km2", "mi2")
3. join("Belgium covers ${2} square miles (${1} km²).")
<END_OF_PLAN>""",
    """Question: Which is farther from the equator, Lima or Nairobi?
Thought: The distance from the equator is the latitude without its sign.
1. city_info("Lima", field="latitude")
2. city_info("Nairobi", field="latitude")
3. calculator("abs(${1})")
4. calculator("abs(${2})")
5. rank(["Lima", "Nairobi"], [$3, $4])
6. join("${5.largest} is farther from the equator (${3}° against ${4}° of latitude).")
<END_OF_PLAN>""",
    """Question: With 2 percent growth a year, how many people would Peru have in 10 years?
1. country_info("Peru", field="population")
2. calculator("${1} * 1.02 ** 10")
3. join("After 10 years Peru would have about ${2} people.")
<END_OF_PLAN>""",
    """Question: Which neighbour of Germany has the most people?
Thought: Each neighbour's population is looked up once the neighbours are known; rank them.
1. country_info("Germany", field="neighbours")
2. country_info($1[*], field="population")
3. rank($1, $2)
4. join("${3.largest} has the most people of Germany's neighbours: ${3.value}.")
<END_OF_PLAN>""",
    """Question: How many of Poland's neighbours use the euro?
Thought: Each neighbour's currencies, then count the lists that hold EUR.
1. country_info("Poland", field="neighbours")
2. country_info($1[*], field="currencies")
3. calculator("len([c for c in ${2} if \\"EUR\\" in c])")
4. join("${3} of Poland's neighbours use the euro.")
<END_OF_PLAN>""",
    """Question: What is the population of Cambridge in the United States, not the one in England?
Thought: The city's country picks the right one of the cities that share the name.
1. city_info("Cambridge", field="population", country="United States")
2. join("Cambridge in the United States has ${1} people.")
<END_OF_PLAN>""",
    """Question: What are the capitals of Peru, Chile and Ecuador?
1. country_info("Peru", field="capital")
2. country_info("Chile", field="capital")
3. country_info("Ecuador", field="capital")
4. join("Peru: ${1}; Chile: ${2}; Ecuador: ${3}.")
<END_OF_PLAN>""",
    """Question: What is the average population of Norway, Sweden and Finland?
1. country_info("Norway", field="population")
2. country_info("Sweden", field="population")
3. country_info("Finland", field="population")
4. calculator("mean(${1}, ${2}, ${3})")
5. join("Their average population is ${4}.")
<END_OF_PLAN>""",
    """Question: Milk costs $4.20 a US gallon. What is that per litre?
1. convert_units(4.20, "USD/gal", "USD/L")
2. join("$4.20 a gallon is ${1} US dollars a litre.")
<END_OF_PLAN>""",
    """Question: Which of Italy, Sweden and Spain use the euro, and what are their capitals?
Thought: Each country's currencies and capital; the answer keeps only those paying in EUR.
1. country_info("Italy", field="currencies")
2. country_info("Sweden", field="currencies")
3. country_info("Spain", field="currencies")
4. country_info("Italy", field="capital")
5. country_info("Sweden", field="capital")
6. country_info("Spain", field="capital")
7. join()
<END_OF_PLAN>""",
    """Question: Is Madrid south of Rome?
Thought: South means a smaller latitude.
1. city_info("Madrid", field="latitude")
2. city_info("Rome", field="latitude")
3. calculator("${1} < ${2}")
4. join()
<END_OF_PLAN>""",
    """Question: How many more neighbours does Brazil have than Argentina?
1. country_info("Brazil", field="neighbours")
2. country_info("Argentina", field="neighbours")
3. calculator("len(${1}) - len(${2})")
4. join("Brazil has ${3} more neighbours than Argentina.")
<END_OF_PLAN>""",
    """Question: Which country is the city of Kraków in?
1. city_info("Kraków", field="country")
2. join("Kraków is in ${1}.")
<END_OF_PLAN>""",
    """Question: Which time zone is Denver in?
1. city_info("Denver", field="timezone")
2. join("Denver is in the ${1} time zone.")
<END_OF_PLAN>""",
    """Question: Which of Quito, Jakarta, Lagos and Santiago lie south of the equator?
Thought: South of the equator is a latitude below 0; rank with below=0 lists them.
1. city_info("Quito", field="latitude")
2. city_info("Jakarta", field="latitude")
3. city_info("Lagos", field="latitude")
4. city_info("Santiago", field="latitude")
5. rank(["Quito", "Jakarta", "Lagos", "Santiago"], [$1, $2, $3, $4], below=0)
6. join("${5.count_below} of them lie south of the equator: ${5.below}.")
<END_OF_PLAN>""",
    """Question: How many people live in Denmark and Norway together?
1. country_info("Denmark", field="population")
2. country_info("Norway", field="population")
3. calculator("${1} + ${2}")
4. join("Together ${3} people live in Denmark and Norway.")
<END_OF_PLAN>""",
    """Question: Which neighbours of Austria have more than 10 million people?
Thought: Each neighbour's population, then rank them with above= the threshold.
1. country_info("Austria", field="neighbours")
2. country_info($1[*], field="population")
3. rank($1, $2, above=10000000)
4. join("${3.count_above} of Austria's neighbours have more than 10 million people: ${3.above}.")
<END_OF_PLAN>""",
    """Question: What time zone is the capital of Japan in?
1. country_info("Japan", field="capital")
2. city_info($1, field="timezone")
3. join("${1}, the capital of Japan, is in the ${2} time zone.")
<END_OF_PLAN>""",
    """Question: How many neighbours does the country that Lyon is in have?
1. city_info("Lyon", field="country")
2. country_info($1, field="neighbours")
3. calculator("len(${2})")
4. join("Lyon is in ${1}, which has ${3} neighbours: ${2}.")
<END_OF_PLAN>""",
    """Question: Which city lies farther north, Madrid or Ankara?
Thought: Farther north is the larger latitude.
1. city_info("Madrid", field="latitude")
2. city_info("Ankara", field="latitude")
3. rank(["Madrid", "Ankara"], [$1, $2])
4. join("${3.largest} lies farther north (latitude ${1} for Madrid, ${2} for Ankara).")
<END_OF_PLAN>""",
    """Question: Which of Ghana, Kenya and Angola has the fewest people?
1. country_info("Ghana", field="population")
2. country_info("Kenya", field="population")
3. country_info("Angola", field="population")
4. rank(["Ghana", "Kenya", "Angola"], [$1, $2, $3], order="smallest")
5. join("${4.smallest} has the fewest people: ${4.value}.")
<END_OF_PLAN>""",
    """Question: Does Canada have more people than Australia and New Zealand combined?
1. country_info("Canada", field="population")
2. country_info("Australia", field="population")
3. country_info("New Zealand", field="population")
4. calculator("${1} > ${2} + ${3}")
5. join()
<END_OF_PLAN>""",
    """Question: How many countries border both Germany and Austria?
1. country_info("Germany", field="neighbours")
2. country_info("Austria", field="neighbours")
3. calculator("common(${1}, ${2})")
4. calculator("len(${3})")
5. join("${4} countries border both Germany and Austria: ${3}.")
<END_OF_PLAN>""",
    """Question: How many of Hungary's neighbours have fewer than 5 million people?
1. country_info("Hungary", field="neighbours")
2. country_info($1[*], field="population")
3. rank($1, $2, below=5000000)
4. join("${3.count_below} of Hungary's neighbours have fewer than 5 million people: ${3.below}.")
<END_OF_PLAN>""",
    """Question: Do Belgium and Switzerland share an official language?
1. country_info("Belgium", field="languages")
2. country_info("Switzerland", field="languages")
3. calculator("common(${1}, ${2})")
4. calculator("len(${3}) > 0")
5. join()
<END_OF_PLAN>""",
    """Question: Are Chile and Argentina in the same subregion?
1. country_info("Chile", field="subregion")
2. country_info("Argentina", field="subregion")
3. calculator("${1} == ${2}")
4. join()
<END_OF_PLAN>""",
    """Question: Is Canberra in the southern hemisphere?
Thought: The southern hemisphere has latitudes below 0.
1. city_info("Canberra", field="latitude")
2. calculator("${1} < 0")
3. join()
<END_OF_PLAN>""",
    """Question: What share of Austria's people live in its capital?
1. country_info("Austria", field="capital")
2. city_info($1, field="population")
3. country_info("Austria", field="population")
4. calculator("${2} / ${3} * 100")
5. join("${4} % of Austria's people live in ${1}.")
<END_OF_PLAN>""",
    """Question: How many degrees of latitude lie between Cairo and Cape Town?
1. city_info("Cairo", field="latitude")
2. city_info("Cape Town", field="latitude")
3. calculator("abs(${1} - ${2})")
4. join("${3} degrees of latitude lie between Cairo and Cape Town.")
<END_OF_PLAN>""",
    """Question: A marathon is 26.2 miles. How many kilometres is that?
1. convert_units(26.2, "mi", "km")
2. join("26.2 miles is ${1} km.")
<END_OF_PLAN>""",
    """Question: My car does 40 miles per gallon. What is that in litres per 100 km?
1. convert_units(40, "mpg", "L/100km")
2. join("40 mpg is ${1} litres per 100 km.")
<END_OF_PLAN>""",
    """Question: The temperature rose by 5 degrees Celsius. How much is that rise in Fahrenheit?
Thought: A rise is a difference of temperatures, not a point on the scale.
1. convert_units(5, "delta_degC", "delta_degF")
2. join("A rise of 5 °C is a rise of ${1} °F.")
<END_OF_PLAN>""",
    """Question: How many people per square mile live in Japan?
1. country_info("Japan", field="population")
2. country_info("Japan", field="area_km2")
3. convert_units($2, "km2", "mi2")
4. calculator("${1} / ${3}")
5. join("Japan has ${4} people per square mile.")
<END_OF_PLAN>""",
    """Question: List the neighbours of Bolivia with their capitals.
1. country_info("Bolivia", field="neighbours")
2. country_info($1[*], field="capital")
3. join()
<END_OF_PLAN>""",
    """Question: Which of Egypt, Brazil, Nigeria and Thailand are in Africa?
Thought: Each country's region; rank groups the names by the region they have.
1. country_info("Egypt", field="region")
2. country_info("Brazil", field="region")
3. country_info("Nigeria", field="region")
4. country_info("Thailand", field="region")
5. rank(["Egypt", "Brazil", "Nigeria", "Thailand"], [$1, $2, $3, $4])
6. join()
<END_OF_PLAN>""",
    """Question: Sort Peru, Cuba and Spain by area, largest first.
1. country_info("Peru", field="area_km2")
2. country_info("Cuba", field="area_km2")
3. country_info("Spain", field="area_km2")
4. rank(["Peru", "Cuba", "Spain"], [$1, $2, $3])
5. join("By area, largest first: ${4.order}.")
<END_OF_PLAN>""",
    """Question: Which has more neighbours, Hungary or Bulgaria?
Thought: Count each list of neighbours, then rank the counts.
1. country_info("Hungary", field="neighbours")
2. country_info("Bulgaria", field="neighbours")
3. calculator("len(${1})")
4. calculator("len(${2})")
5. rank(["Hungary", "Bulgaria"], [$3, $4])
6. join("${5.largest} has more neighbours: ${3} for Hungary, ${4} for Bulgaria.")
<END_OF_PLAN>""",
]
